package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/search"
)

func (a *app) searchCmd() *cobra.Command {
	var o search.Options
	var since string
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find conversations of any agent, in any session, by what was said in them",
		Long: `search finds what was said in every conversation of every agent (Claude Code, Codex, Gemini CLI, Qwen
Code, opencode, pi, Kimi Code, Copilot CLI) in the store's sessions: prompts, replies, tool calls and their results, ranked best first
(bm25). Each hit prints the session, agent, conversation id, time, cwd and what it was, then the text around
the match, the match in bold on a terminal. --json prints the hits as JSON; -l prints only the ids of the
sessions with a match, best first. A query that matches more than 5,000 entries is not ranked: the entries
indexed last come first (more words, a phrase, --session, --agent or --since narrow it).

QUERY is SQLite FTS5's: words (all must occur; one argument or several), "a phrase", a prefix*, OR, NOT,
NEAR(a b), (grouping). A word with other characters (fix-login, main.go) is taken as a phrase.

Exit status, as grep's: 0 when something matched, 1 when nothing did, 2 for a query FTS5 cannot read, 125 for
bad usage or a store that cannot be searched.

The index is the store's own, <store>/index/search.db. Each search first catches up with what changed since
the last (a stat of each conversation file: what was appended is indexed alone, a file rewritten again whole,
a conversation or session gone dropped); one that takes over half a second shows a progress bar on a
terminal. --reindex builds it anew, with a progress bar. A search beside another's --reindex catches up again
and answers in full.

What a session can make the index hold is bounded, its files being written by its agent: each session's text
takes at most 128 MiB of the index (8 GiB for the store), its files are read 2 GiB at most in all, each file
once however many links it has. A session past its share is indexed in part, and search says so on stderr.`,
		Example: `  sessionfs search walrus
  sessionfs search '"database is locked"' --agent codex --since 7d
  sessionfs search 'migrat* NOT sqlite' --label team=web -l
  sessionfs search needle --json | jq -r '.[].conversation'
  sessionfs search --reindex`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.Match = strings.Join(args, " ") // words typed apart: all must occur
			} else if !o.Reindex {
				return usageError("search needs a QUERY (or --reindex)")
			}
			var err error
			if o.Since, err = search.ParseSince(since, time.Now()); err != nil {
				return usageError(err.Error())
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			if o.IDs && !cmd.Flags().Changed("limit") || o.Limit == 0 {
				o.Limit = -1 // all
			}
			return a.searchExit(s, o, runSearch(cmd.OutOrStdout(), cmd.ErrOrStderr(), s, o))
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Sessions, "session", nil, "only in this session (repeatable)")
	f.StringVar(&o.Agent, "agent", "", "only this agent's conversations (claude, codex, gemini, qwen, opencode, pi, kimi, copilot)")
	f.StringArrayVar(&o.Labels, "label", nil, "only in sessions with label K=V, or with label K (repeatable: all must hold)")
	f.StringVar(&since, "since", "", "only what was said since then: 90m, 36h, 7d, or a date (2026-11-25)")
	f.BoolVar(&o.JSON, "json", false, "print the hits as JSON")
	f.BoolVarP(&o.IDs, "list", "l", false, "print only the ids of the sessions with a match")
	f.IntVar(&o.Limit, "limit", 20, "print at most this many hits (with -l: sessions, all by default; 0: all)")
	f.BoolVar(&o.Reindex, "reindex", false, "build the index anew first (with a progress bar)")
	return cmd
}

// searchExit is the CLI's answer to search's err, as grep's: 1 when nothing matched, 2 for a query FTS5 cannot
// read; a --session that is no session is named with the ones close to it.
func (a *app) searchExit(s *layout.Store, o search.Options, err error) error {
	switch {
	case errors.Is(err, layout.ErrNotFound):
		for _, id := range o.Sessions {
			if !s.Exists(id) {
				return fmt.Errorf("%w%s", err, a.suggestion(id))
			}
		}
	case errors.Is(err, search.ErrNoMatch):
		return exitCode(1)
	case errors.Is(err, search.ErrQuery):
		return codedError{code: 2, err: errors.New(strings.TrimPrefix(err.Error(), "search: "))}
	}
	return err
}

// runSearch runs search o with a progress bar for the indexing, and says on stderr when nothing matched.
func runSearch(stdout, stderr io.Writer, s *layout.Store, o search.Options) error {
	o.Color = term.IsTerminal(int(os.Stdout.Fd())) && os.Getenv("NO_COLOR") == ""
	var finish func()
	if o.Reindex {
		o.Progress, finish = newCountBar("indexing conversations")
	} else { // a catch-up: most are quick, and show nothing
		o.Progress, finish = lateBar("indexing conversations", newCountBar)
	}
	out := &countingWriter{w: stdout}
	err := search.Run(out, s, o)
	finish()
	if errors.Is(err, search.ErrNoMatch) && !o.JSON && !o.IDs {
		// A person sees why nothing was printed; scripts read --json or -l, which stay empty.
		fmt.Fprintf(stderr, "sessionfs: no conversation matches %q\n", o.Match)
	}
	return err
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

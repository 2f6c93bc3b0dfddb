package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/travel"
)

func (a *app) importCmd() *cobra.Command {
	var opts agents.ImportOptions
	var asJSON bool
	var agent string
	var archive, maxBytes string
	var topts travel.ImportOptions
	cmd := &cobra.Command{
		Use:   "import [--agent AGENT] [--from ~/.claude] [--project PATH] [--into ID] [--dry-run] | --archive FILE [--as ID]",
		Short: "Adopt existing Claude Code history, or restore a session from an export (--archive)",
		Long: `import copies each conversation (projects/<folder>/<uuid>.jsonl with its <uuid>/ folder) of a Claude Code
config dir into a session's transcript folder, keeping modification times, and records the cwds it ran in.
Each conversation gets a session named by its uuid, or all go into one with --into. The originals are only
read. Running it again copies only what is new or has grown. Files that are not transcripts are reported and
skipped.

--agent codex|gemini|qwen imports that agent's conversations instead, from its folder (default: its variable's,
else ~/.codex, ~/.gemini, ~/.qwen): Codex's rollouts by date as they were, Gemini's and Qwen's chats into the
folder of /session/workspace. --project keeps those run in PATH or below (Gemini's: filed under PATH's folder).

--agent opencode imports from opencode's database (--from: the database file, or the folder holding
opencode.db; default $XDG_DATA_HOME/opencode, else ~/.local/share/opencode), read from a private copy (an
opencode running meanwhile is not disturbed): each conversation with its subagents' sessions, messages, parts,
events and project, never a login (the account, credential and control_account tables) nor a share's secret.
A session with no opencode database gets one holding only what was imported; into one it has, the rows are
merged in one transaction, refused if it is another opencode version's (its schema differs). A conversation
is copied again only when the source has it newer than the session. Its cwd stays as it was: each launch
moves it to the cwd opencode starts in.

With --archive, import restores a session written by "sessionfs export" (FILE, or - for stdin), as --as ID
or under its own id. A damaged or hostile archive (absolute names, "..", links leading out of the session,
device files, more than --max-bytes of content or --max-files entries) is refused and leaves nothing behind.`,
		Example: `  sessionfs import                              # all of ~/.claude
  sessionfs import --project ~/src/webapp --into webapp
  sessionfs import --from /backup/.claude --dry-run
  sessionfs import --agent codex --project ~/src/webapp --into webapp
  sessionfs import --agent opencode --project ~/src/webapp
  sessionfs import --archive fix-login.tar.zst --as fix-login-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if archive != "" {
				if cmd.Flags().Changed("agent") || opts.From != "" || opts.Project != "" || opts.Into != "" || opts.DryRun || asJSON {
					return usageError("import: --archive takes only --as, --max-bytes and --max-files")
				}
				n, err := humanize.ParseBytes(maxBytes)
				if err != nil || n > 1<<62 {
					return usageError(fmt.Sprintf("import: --max-bytes %q: want a size such as 64GiB", maxBytes))
				}
				topts.MaxBytes = int64(n)
				return a.importArchive(cmd, archive, topts)
			}
			if topts.As != "" {
				return usageError("import: --as goes with --archive (--into gathers conversations)")
			}
			ag, err := checkAgent(agent)
			if err != nil {
				return err
			}
			s, err := a.createStore()
			if err != nil {
				return err
			}
			if ag != claude.Agent {
				return importAgent(cmd, s, ag, opts, asJSON)
			}
			if opts.From == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return err
				}
				opts.From = filepath.Join(home, ".claude")
			}
			if term.IsTerminal(int(os.Stderr.Fd())) && !asJSON {
				bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("importing"), progressbar.OptionClearOnFinish())
				opts.Progress = func(done, total int) {
					bar.ChangeMax(total)
					_ = bar.Set(done)
				}
				defer bar.Finish()
			}
			rep, err := claude.Import(s, opts)
			if err != nil {
				return err
			}
			if asJSON {
				rep.Sessions, rep.Imported = orEmpty(rep.Sessions), orEmpty(rep.Imported)
				rep.Unchanged, rep.Malformed = orEmpty(rep.Unchanged), orEmpty(rep.Malformed)
				return printJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			verb := "imported"
			if opts.DryRun {
				verb = "would import"
			}
			for _, m := range rep.Malformed {
				fmt.Fprintf(os.Stderr, "sessionfs: skipped %s\n", oneLine(m))
			}
			fmt.Fprintf(w, "%s %s (%d unchanged) into %s; %s skipped\n", verb, plural(len(rep.Imported), "conversation"),
				len(rep.Unchanged), plural(len(rep.Sessions), "new session"), plural(len(rep.Malformed), "file"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.From, "from", "", "the Claude Code config dir to read (default ~/.claude), or the agent's folder (opencode's: its database or the folder holding it)")
	f.StringVar(&opts.Project, "project", "", "only conversations of this project folder")
	f.StringVar(&opts.Into, "into", "", "gather the conversations into this session")
	f.BoolVarP(&opts.DryRun, "dry-run", "n", false, "say what would be imported, change nothing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	agentFlag(cmd, &agent, "whose history to import (claude, codex, gemini, qwen, opencode)")
	f.StringVar(&archive, "archive", "", "restore a session from an archive of sessionfs export (- for stdin)")
	f.StringVar(&topts.As, "as", "", "the restored session's id (default: the archive's)")
	f.StringVar(&maxBytes, "max-bytes", humanize.IBytes(travel.DefaultMaxBytes), "refuse an archive holding more content")
	f.IntVar(&topts.MaxFiles, "max-files", travel.DefaultMaxFiles, "refuse an archive holding more entries")
	return cmd
}

func (a *app) findCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "find UUID",
		Short: "Print the session that holds a conversation of any agent",
		Long: `find prints the session that holds conversation UUID: a Claude transcript, folded or not, else a Codex,
Gemini CLI or Qwen Code session of that id (the id each prints, and the one "sessionfs show" lists).

When several sessions hold a transcript of that uuid (a copy, a fork, or a session that planted one), the
session whose transcript was made first owns it: find prints it, resume resumes it, by-claude-id/ points at it.
The others are named on stderr (and under "also" with --json).`,
		Example: `  sessionfs find 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01
  sessionfs find 019a2c1e-7f3d-7c41-9b2e-3f1d0c8e5a7b --json   # a Codex session id: "agent": "codex"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openStore()
			if err != nil {
				return err
			}
			uuid := args[0]
			holders, agent, err := anyHolders(s, uuid)
			if errors.Is(err, claude.ErrNoConversation) {
				// A start of one (watch prints 8 characters).
				if full, xerr := expandConversation(s, uuid); xerr != nil {
					return xerr
				} else if full != uuid {
					uuid = full
					holders, agent, err = anyHolders(s, uuid)
				}
			}
			if err != nil {
				return err
			}
			id := holders[0].ID
			dir, _ := sessionDir(s, id)
			if asJSON {
				also := []string{}
				for _, h := range holders[1:] {
					also = append(also, h.ID)
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"session": id, "dir": dir, "conversation": uuid,
					"agent": agent, "also": also})
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	var claudeBin string
	cmd := &cobra.Command{
		Use:   "resume UUID|ID [-- CLAUDE-ARGS...]",
		Short: "Resume a conversation (by its uuid) or a session's newest one (by the session id)",
		Long: `resume runs claude in the right session with the right environment: "claude --resume UUID" in the session
that holds conversation UUID, or "claude --continue" in session ID. It runs in the session's workspace,
through the mount when the store is mounted. A conversation of another agent is resumed with that agent, from
PATH, with its variables set as exec --agent sets them: "codex resume UUID", "gemini --resume UUID",
"qwen --resume UUID", "opencode --session ID" (its conversations moved to the workspace first).`,
		Example: `  sessionfs resume 2fe2d21b-be8f-4b12-b46b-12e68f6e9f01
  sessionfs resume fix-login -- -p "carry on"`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 1 || (dash == -1 && len(args) > 1) {
				return usageError("resume: want UUID|ID [-- CLAUDE-ARGS...]")
			}
			s, err := a.openStore()
			if err != nil {
				return err
			}
			target, extra := args[0], args[1:]
			// Neither a whole conversation id nor a session's: the start of a conversation's id (watch prints 8).
			if !s.Exists(target) {
				if h, _ := claude.Holders(s, target); len(h) == 0 {
					if o, _ := all.Holders(s, target); len(o) == 0 {
						if target, err = expandConversation(s, target); err != nil {
							return err
						}
					}
				}
			}
			// A conversation first: an imported session is named after its conversation's uuid, and
			// "resume UUID" must resume that conversation, not the session's newest one.
			holders, err := claude.Holders(s, target)
			if err != nil && !errors.Is(err, claude.ErrNoConversation) {
				return err
			}
			if len(holders) > 0 {
				if err := needCLI(claudeBin); err != nil {
					return err
				}
				holders, _ = conversationHolders(s, target) // names the other holders, if any
				return a.execIn(holders[0].ID, append([]string{claudeBin, "--resume", target}, extra...))
			}
			if others, err := all.Holders(s, target); err == nil && len(others) > 0 {
				holders, name, _ := anyHolders(s, target) // names the other holders, if any
				ag, _ := all.ByName(name)
				argv := append(ag.Resume(target), extra...)
				if err := needCLI(argv[0]); err != nil {
					return err
				}
				return a.execIn(holders[0].ID, argv, func(sp *backends.Spec) { sp.Agent = ag.Name })
			}
			id, err := a.resolveID(target)
			if errors.Is(err, layout.ErrNotFound) || errors.Is(err, layout.ErrInvalidID) {
				return fmt.Errorf("no session or conversation is called %q (sessionfs ls; sessionfs find UUID)", target)
			} else if err != nil {
				return err
			}
			if err := needCLI(claudeBin); err != nil {
				return err
			}
			return a.execIn(id, append([]string{claudeBin, "--continue"}, extra...))
		},
	}
	cmd.Flags().StringVar(&claudeBin, "claude", "claude", "the claude command")
	a.waitFlag(cmd)
	return cmd
}

// anyHolders is conversationHolders for a conversation of any agent: Claude's first, then the others' (a uuid
// is one agent's).
func anyHolders(s *layout.Store, uuid string) ([]agents.Holder, string, error) {
	holders, err := conversationHolders(s, uuid)
	if !errors.Is(err, claude.ErrNoConversation) {
		return holders, claude.Agent.Name, err
	}
	others, aerr := all.Holders(s, uuid)
	if aerr != nil || len(others) == 0 {
		return nil, "", err
	}
	holders = others
	if len(holders) > 1 {
		var ids []string
		for _, h := range holders[1:] {
			ids = append(ids, h.ID)
		}
		warnf("conversation %s is also in session(s) %s; using %s, whose file was made first",
			uuid, strings.Join(ids, ", "), holders[0].ID)
	}
	return holders, others[0].Agent, nil
}

// conversationHolders returns the sessions holding conversation uuid, the owner first, and names the others on
// stderr: a uuid in two sessions is never resolved silently.
func conversationHolders(s *layout.Store, uuid string) ([]agents.Holder, error) {
	holders, err := claude.Holders(s, uuid)
	if err != nil {
		return nil, err
	}
	if len(holders) == 0 {
		return nil, fmt.Errorf("conversation %s: %w", uuid, claude.ErrNoConversation)
	}
	if len(holders) > 1 {
		var others []string
		for _, h := range holders[1:] {
			others = append(others, h.ID)
		}
		warnf("conversation %s is also in session(s) %s; using %s, whose transcript was made first",
			uuid, strings.Join(others, ", "), holders[0].ID)
	}
	return holders, nil
}

// npmPackages are the agents' CLIs as npm installs them, for the hint when one is missing.
var npmPackages = map[string]string{
	"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli", "qwen": "@qwen-code/qwen-code", "opencode": "opencode-ai",
}

// needCLI checks that the agent's command bin can be run, before anything is recorded: a missing one is exit
// 127 (not found, as a shell says) with the way to install it.
func needCLI(bin string) error {
	if _, err := exec.LookPath(bin); err == nil {
		return nil
	}
	hint := "sessionfs doctor checks it"
	if pkg, ok := npmPackages[filepath.Base(bin)]; ok {
		hint = "install it with: npm install -g " + pkg + " (sessionfs doctor checks it)"
	}
	return codedError{127, fmt.Errorf("%s is not on PATH: %s", bin, hint)}
}

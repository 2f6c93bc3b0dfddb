package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) watchCmd() *cobra.Command {
	var asJSON, fromStart, noFollow bool
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a session's conversations live, one line per message",
		Long: `watch follows every transcript of the session (subagents' too) and prints each new message as one line:
the conversation's short id (the first 8 characters of its uuid), time, role, then the text or the tool call;
subagent messages are marked [agent-...]. The other agents' conversations in the session (Codex, Gemini CLI,
Qwen Code) are followed too, marked [codex], [gemini], [qwen]. --json prints the raw entries, one per line, for
tools. It starts at the current end of the transcripts, like tail -f; --from-start prints what they hold first
(to read a conversation: --from-start --no-follow).`,
		Example: `  sessionfs watch fix-login
  sessionfs watch fix-login --from-start --no-follow | less   # read the session's conversations so far
  sessionfs watch fix-login --json | jq -r .type`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, m, err := a.session(args[0])
			if err != nil {
				return err
			}
			stop := make(chan os.Signal, 1)
			if noFollow {
				fromStart = true
				close(stop) // printed, then done (no signal is delivered on it)
			} else {
				signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
			}
			// All of projects/: used without the mount, Claude files transcripts under other folder names.
			p := layout.Derive(s.Dir(m.ID))
			return follow(p.Root, p.Projects, cmd.OutOrStdout(), asJSON, fromStart, stop)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each new transcript entry as JSON")
	cmd.Flags().BoolVar(&fromStart, "from-start", false, "print what the transcripts already hold first")
	cmd.Flags().BoolVar(&noFollow, "no-follow", false, "print what the transcripts hold and exit (implies --from-start)")
	return cmd
}

// follower tails the transcripts of a session: Claude's under its projects folder, the other agents' in theirs.
type follower struct {
	root    string // the session's folder
	claude  string // its .claude/projects
	w       *fsnotify.Watcher
	out     io.Writer
	json    bool
	offsets map[string]int64
	partial map[string][]byte // an unfinished last line, kept until its newline arrives
}

func follow(root, projects string, out io.Writer, asJSON, fromStart bool, stop <-chan os.Signal) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	f := &follower{root: root, claude: projects, w: w, out: out, json: asJSON, offsets: map[string]int64{}, partial: map[string][]byte{}}
	if err := w.Add(root); err != nil { // itself only: an agent's folder made later is followed from its start
		return err
	}
	if err := f.add(projects, !fromStart); err != nil {
		return err
	}
	for _, a := range all.Agents {
		if a != claude.Agent {
			_ = f.add(filepath.Join(root, a.Dir), !fromStart)
		}
	}
	for {
		select {
		case <-stop:
			return nil
		case err := <-w.Errors:
			return err
		case ev := <-w.Events:
			fi, err := os.Stat(ev.Name)
			switch {
			case err != nil:
				delete(f.offsets, ev.Name)
			case fi.IsDir() && ev.Has(fsnotify.Create):
				if filepath.Dir(ev.Name) == f.root && all.ByDir(filepath.Base(ev.Name)) == nil {
					continue // of the session's own folders, only the agents' are followed
				}
				_ = f.add(ev.Name, false) // a new sidecar, subagents or agent folder: read it from the start
			case strings.HasSuffix(ev.Name, ".jsonl"):
				f.read(ev.Name)
			}
		}
	}
}

// add watches dir and the folders below it; existing transcripts start at their end when atEnd.
func (f *follower) add(dir string, atEnd bool) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			return f.w.Add(p)
		}
		if strings.HasSuffix(p, ".jsonl") {
			if fi, err := d.Info(); err == nil && atEnd {
				f.offsets[p] = fi.Size()
			} else {
				f.read(p)
			}
		}
		return nil
	})
}

// read prints the complete lines appended to p since the last read, if p is a conversation file of an agent.
func (f *follower) read(p string) {
	render, conv, sub := f.kind(p)
	if render == nil {
		return
	}
	// The session's files are its processes' to write: never block on a FIFO, never follow a link out.
	fh, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return
	}
	if _, err := fh.Seek(f.offsets[p], io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(fh)
	if err != nil || len(data) == 0 {
		return
	}
	f.offsets[p] += int64(len(data))
	data = append(f.partial[p], data...)
	end := bytes.LastIndexByte(data, '\n')
	f.partial[p] = append([]byte(nil), data[end+1:]...)
	for _, line := range bytes.Split(data[:end+1], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if f.json {
			if json.Valid(line) {
				fmt.Fprintf(f.out, "%s\n", line)
			}
			continue
		}
		if s := render(line, sub); s != "" {
			fmt.Fprintln(f.out, conv, s)
		}
	}
}

// kind tells how p's lines render and the short id of its conversation (and subagent, for Claude's); render is nil
// for a file that is no agent's conversation.
func (f *follower) kind(p string) (render func(line []byte, sub string) string, conv, sub string) {
	if rel, err := filepath.Rel(f.root, p); err == nil {
		if a, conv, ok := all.FileOf(filepath.ToSlash(rel)); ok {
			return func(line []byte, _ string) string { return agents.Line(a, line) }, conv, ""
		}
	}
	if rel, err := filepath.Rel(f.claude, p); err != nil || !filepath.IsLocal(rel) {
		return nil, "", ""
	}
	conv = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	if filepath.Base(filepath.Dir(p)) == "subagents" {
		sub, conv = conv, filepath.Base(filepath.Dir(filepath.Dir(p)))
	}
	if len(conv) > 8 {
		conv = conv[:8]
	}
	return func(line []byte, sub string) string {
		var e claude.Entry
		if json.Unmarshal(line, &e) != nil {
			return ""
		}
		return claude.Line(&e, sub)
	}, conv, sub
}

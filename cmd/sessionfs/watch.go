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
	"time"

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
Qwen Code, opencode) are followed too, marked [codex], [gemini], [qwen], [opencode]. --json prints the raw
entries, one per line, for tools. It starts at the current end of the transcripts, like tail -f; --from-start
prints what they hold first (to read a conversation: --from-start --no-follow).

opencode keeps its messages as rows of its database: watch reads a private copy of it when it changes (at most
a few times a second) and prints a message once it is complete, a reply when opencode marks it completed (its
text and tool calls then final), a prompt once its text is in. Its short id is the 8 characters after "ses_",
which find and resume take; a subagent's messages are marked [agent-<its short id>]. With --json each message
is one object as opencode's API gives it: {"info": the message, "parts": [its parts]}.`,
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
			sess, err := s.OpenSession(m.ID)
			if err != nil {
				return err
			}
			defer sess.Close()
			// All of projects/: used without the mount, Claude files transcripts under other folder names.
			p := layout.Derive(s.Dir(m.ID))
			return follow(sess, p.Root, p.Projects, cmd.OutOrStdout(), asJSON, fromStart, stop)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each new transcript entry as JSON")
	cmd.Flags().BoolVar(&fromStart, "from-start", false, "print what the transcripts already hold first")
	cmd.Flags().BoolVar(&noFollow, "no-follow", false, "print what the transcripts hold and exit (implies --from-start)")
	return cmd
}

// follower tails the transcripts of a session: Claude's under its projects folder, the other agents' in theirs.
type follower struct {
	sess    *layout.Dir
	root    string // the session's folder
	claude  string // its .claude/projects
	w       *fsnotify.Watcher
	out     io.Writer
	json    bool
	offsets map[string]int64
	partial map[string][]byte // an unfinished last line, kept until its newline arrives
	tails   []tail
	tailed  map[string]bool // the files whose change the tails read
	warned  map[string]bool
}

// tail is an agent that keeps its conversations as rows of a database (agents.Tail).
type tail struct {
	agent *agents.Agent
	next  func(*layout.Dir) ([]string, error)
}

// debounce is how long a burst of writes to a tailed database is let run before it is read (one copy per burst).
const debounce = 200 * time.Millisecond

func follow(sess *layout.Dir, root, projects string, out io.Writer, asJSON, fromStart bool, stop <-chan os.Signal) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	f := &follower{sess: sess, root: root, claude: projects, w: w, out: out, json: asJSON, offsets: map[string]int64{},
		partial: map[string][]byte{}, tailed: map[string]bool{}, warned: map[string]bool{}}
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
		if a.Tail != nil {
			f.tails = append(f.tails, tail{a, a.Tail.Start(fromStart, asJSON)})
			for _, rel := range a.Tail.Files {
				f.tailed[filepath.Join(root, a.Dir, rel)] = true
			}
		}
	}
	took := f.poll()
	var due <-chan time.Time // a read of the tails is pending
	var last time.Time
	later := func() {
		if due == nil {
			// Reading copies the database: at most a fifth of the time goes to it, however fast it is written.
			due = time.After(max(debounce, time.Until(last.Add(4*took))))
		}
	}
	for {
		select {
		case <-stop:
			return nil
		case err := <-w.Errors:
			return err
		case <-due:
			due, last = nil, time.Now()
			took = f.poll()
		case ev := <-w.Events:
			if f.tailed[ev.Name] {
				later()
				continue
			}
			fi, err := os.Stat(ev.Name)
			switch {
			case err != nil:
				delete(f.offsets, ev.Name)
			case fi.IsDir() && ev.Has(fsnotify.Create):
				if filepath.Dir(ev.Name) == f.root && all.ByDir(filepath.Base(ev.Name)) == nil {
					continue // of the session's own folders, only the agents' are followed
				}
				_ = f.add(ev.Name, false) // a new sidecar, subagents or agent folder: read it from the start
				later()                   // a tailed database may be in it already
			case strings.HasSuffix(ev.Name, ".jsonl"):
				f.read(ev.Name)
			}
		}
	}
}

// poll prints what the tails have new, and returns how long it took. A tail that cannot read (a session that
// put something else where its database goes) is named once on stderr.
func (f *follower) poll() time.Duration {
	start := time.Now()
	for _, t := range f.tails {
		lines, err := t.next(f.sess)
		if err != nil {
			if msg := err.Error(); !f.warned[msg] {
				f.warned[msg] = true
				warnf("watch: %s: %s", t.agent.Name, oneLine(msg))
			}
			continue
		}
		for _, l := range lines {
			fmt.Fprintln(f.out, l)
		}
	}
	return time.Since(start)
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

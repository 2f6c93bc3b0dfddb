// Package follow prints a session's conversations as its agents write them, one line per message (or the raw
// entries): Claude's transcripts under its projects folder, the other agents' files in their folders, and the
// conversations an agent keeps as rows of a database (agents.Tail). It is what "sessionfs watch" runs.
package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Options say what a Follower prints.
type Options struct {
	JSON bool // each new entry as it is written (JSON), instead of a line per message
	// FromStart prints what the conversations already hold first, every agent's interleaved by time; else they
	// are followed from their current end, as tail -f.
	FromStart bool
	// Warn is told, once each, what a tail could not read (a session that put something else where its database
	// goes); nil: nobody is told.
	Warn func(string)
}

// Follower tails the conversations of one session.
type Follower struct {
	sess    *layout.Dir
	root    string // the session's folder
	claude  string // Claude's projects folder in it
	out     io.Writer
	opts    Options
	w       *fsnotify.Watcher
	offsets map[string]int64
	partial map[string][]byte // an unfinished last line, kept until its newline arrives
	tails   []tail
	tailed  map[string]bool // the files whose change the tails read
	warned  map[string]bool
	// held are the lines of the start, printed sorted by time once all is read (holding until then); last is the
	// time of each source's latest line, which a line of no time of its own takes (to stay beside it).
	held    []timed
	holding bool
	last    map[string]time.Time
}

// timed is a line to print and when its message was written.
type timed struct {
	at   time.Time
	text string
}

// tail is an agent that keeps its conversations as rows of a database (agents.Tail).
type tail struct {
	agent *agents.Agent
	next  func(*layout.Dir) ([]string, error)
}

// debounce is how long a burst of writes to a tailed database is let run before it is read (one copy per burst).
const debounce = 200 * time.Millisecond

// New follows the session at root, open as sess, whose Claude transcripts are under projects (all of the
// session's projects folder: used without the mount, Claude files transcripts under other folder names), printing
// to out.
func New(sess *layout.Dir, root, projects string, out io.Writer, opts Options) *Follower {
	return &Follower{sess: sess, root: root, claude: projects, out: out, opts: opts, offsets: map[string]int64{},
		partial: map[string][]byte{}, tailed: map[string]bool{}, warned: map[string]bool{}, last: map[string]time.Time{}}
}

// Run prints what the conversations have new until ctx ends (at once, when it has ended already: then only what
// they hold is printed, with FromStart).
func (f *Follower) Run(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	f.w = w
	if err := w.Add(f.root); err != nil { // itself only: an agent's folder made later is followed from its start
		return err
	}
	f.holding = true // what the conversations hold, read file by file and tail by tail, is printed by time
	if err := f.add(f.claude, !f.opts.FromStart); err != nil {
		return err
	}
	for _, a := range all.Agents {
		if a != claude.Agent {
			_ = f.add(filepath.Join(f.root, a.Dir), !f.opts.FromStart)
		}
		if a.Tail != nil {
			f.tails = append(f.tails, tail{a, a.Tail.Start(f.opts.FromStart, f.opts.JSON)})
			for _, rel := range a.Tail.Files {
				f.tailed[filepath.Join(f.root, a.Dir, rel)] = true
			}
		}
	}
	took := f.poll()
	f.flush()
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
		case <-ctx.Done():
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

// poll prints what the tails have new, and returns how long it took. A tail that cannot read is told to Warn
// once.
func (f *Follower) poll() time.Duration {
	start := time.Now()
	for _, t := range f.tails {
		lines, err := t.next(f.sess)
		if err != nil {
			if msg := err.Error(); !f.warned[msg] {
				f.warned[msg] = true
				if f.opts.Warn != nil {
					f.opts.Warn(t.agent.Name + ": " + msg)
				}
			}
			continue
		}
		for _, l := range lines {
			f.emit(t.agent.Name, tailTime(l, f.opts.JSON), l)
		}
	}
	return time.Since(start)
}

// emit prints line text of source src (a file, a tail), written at at, or holds it for flush.
func (f *Follower) emit(src string, at time.Time, text string) {
	if at.IsZero() {
		at = f.last[src]
	} else {
		f.last[src] = at
	}
	if f.holding {
		f.held = append(f.held, timed{at, text})
		return
	}
	fmt.Fprintln(f.out, text)
}

// flush prints the lines held, oldest first (a source's own order kept for lines of one time), and stops holding.
func (f *Follower) flush() {
	sort.SliceStable(f.held, func(i, j int) bool { return f.held[i].at.Before(f.held[j].at) })
	for _, l := range f.held {
		fmt.Fprintln(f.out, l.text)
	}
	f.held, f.holding = nil, false
}

// tailTime is when the message of line, as a tail returned it, was written; zero when it cannot tell. A tail
// gives lines, not times: the time is read back from the line, as agents.Render printed it ("<short id> <time>
// ..."), or from the message's info.time.created (ms) in opencode's JSON.
func tailTime(line string, asJSON bool) time.Time {
	if asJSON {
		var m struct {
			Info struct {
				Time struct {
					Created int64 `json:"created"`
				} `json:"time"`
			} `json:"info"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Info.Time.Created == 0 {
			return time.Time{}
		}
		return time.UnixMilli(m.Info.Time.Created)
	}
	f := strings.Fields(line)
	if len(f) < 3 {
		return time.Time{}
	}
	if at, err := time.ParseInLocation(agents.StampDated, f[1]+" "+f[2], time.Local); err == nil {
		return at
	}
	clock, err := time.ParseInLocation(agents.StampToday, f[1], time.Local)
	if err != nil {
		return time.Time{}
	}
	y, m, d := time.Now().Date()
	return time.Date(y, m, d, clock.Hour(), clock.Minute(), clock.Second(), 0, time.Local)
}

// add watches dir and the folders below it; existing transcripts start at their end when atEnd.
func (f *Follower) add(dir string, atEnd bool) error {
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
func (f *Follower) read(p string) {
	parse, conv := f.kind(p)
	if parse == nil {
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
		at, s := parse(line)
		switch {
		case f.opts.JSON && json.Valid(line):
			f.emit(p, at, string(line))
		case !f.opts.JSON && s != "":
			f.emit(p, at, conv+" "+s)
		}
	}
}

// kind tells how p's lines read (each line's time, zero if it has none, and its message rendered, "" if it is
// none) and the short id of its conversation; parse is nil for a file that is no agent's conversation.
func (f *Follower) kind(p string) (parse func(line []byte) (time.Time, string), conv string) {
	if rel, err := filepath.Rel(f.root, p); err == nil {
		if a, conv, ok := all.FileOf(filepath.ToSlash(rel)); ok {
			return func(line []byte) (time.Time, string) {
				at, _, _, _ := a.Files.Line(line)
				return at, agents.Line(a, line)
			}, conv
		}
	}
	if rel, err := filepath.Rel(f.claude, p); err != nil || !filepath.IsLocal(rel) {
		return nil, ""
	}
	conv = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	sub := ""
	if filepath.Base(filepath.Dir(p)) == "subagents" {
		sub, conv = conv, filepath.Base(filepath.Dir(filepath.Dir(p)))
	}
	if len(conv) > 8 {
		conv = conv[:8]
	}
	return func(line []byte) (time.Time, string) {
		var e claude.Entry
		if json.Unmarshal(line, &e) != nil {
			return time.Time{}, ""
		}
		return e.Timestamp, claude.Line(&e, sub)
	}, conv
}

package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Entry is the part of a transcript line sessionfs reads. Lines carry far more; unknown fields are ignored so new
// CLI versions keep working.
type Entry struct {
	Type        string    `json:"type"`
	SessionID   string    `json:"sessionId"`
	Timestamp   time.Time `json:"timestamp"`
	Cwd         string    `json:"cwd"`
	IsSidechain bool      `json:"isSidechain"`
	IsMeta      bool      `json:"isMeta"`
	Message     *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// Part is one content block of a message.
type Part struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`  // tool_use
	Input   json.RawMessage `json:"input"` // tool_use
	Content json.RawMessage `json:"content"`
}

// Parts returns the message's content blocks; a plain string content is one text part.
func (e *Entry) Parts() []Part {
	if e.Message == nil || len(e.Message.Content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(e.Message.Content, &s) == nil {
		return []Part{{Type: "text", Text: s}}
	}
	var parts []Part
	_ = json.Unmarshal(e.Message.Content, &parts)
	return parts
}

// Text joins the message's text parts.
func (e *Entry) Text() string {
	var b strings.Builder
	for _, p := range e.Parts() {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// IsMessage reports whether the line is a user or assistant message (not metadata, attachments, queue events).
func (e *Entry) IsMessage() bool {
	return (e.Type == "user" || e.Type == "assistant") && e.Message != nil
}

// ScanEntries streams a transcript, calling fn for each line that parses. It returns the number of malformed lines,
// which are skipped: a torn last line (a writer mid-append) or garbage never stops the scan.
func ScanEntries(r io.Reader, fn func(*Entry)) (malformed int, err error) {
	return agents.ScanJSON(r, fn)
}

// ReadConversation summarises the transcript at path and counts its subagents. The file is read only if it is a
// regular file reached with no final symlink (a FIFO never blocks it).
func ReadConversation(path string) (agents.Conversation, error) {
	c := agents.Conversation{Agent: name, ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Path: path}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return c, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return c, fmt.Errorf("%s: not a regular file", path)
	}
	err = summarise(&c, f)
	c.Subagents = countSubagents(filepath.Join(filepath.Dir(path), c.ID, "subagents"))
	return c, err
}

// summarise reads a transcript into c.
func summarise(c *agents.Conversation, f *os.File) error {
	if st, err := f.Stat(); err == nil {
		c.Size = st.Size()
	}
	var err error
	c.Malformed, err = ScanEntries(f, func(e *Entry) {
		c.At(e.Timestamp)
		if e.Cwd != "" && !slices.Contains(c.Cwds, e.Cwd) {
			c.Cwds = append(c.Cwds, e.Cwd)
		}
		if !e.IsMessage() {
			return
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Type == "user" && !e.IsMeta && !e.IsSidechain {
			c.FirstPrompt = e.Text()
		}
	})
	return err
}

func countSubagents(dir string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			n++
		}
	}
	return n
}

// Conversations lists the conversations in a transcript folder (a session's canonical folder), newest first.
// Unreadable transcripts are reported with what could be read; a missing folder has none.
func Conversations(dir string) ([]agents.Conversation, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []agents.Conversation
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		c, _ := ReadConversation(filepath.Join(dir, e.Name()))
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out, nil
}

// CountConversations counts the conversations of the session open as sess without reading them: listing
// thousands of sessions must not parse every transcript. Everything is resolved beneath sess, no symlink followed.
func CountConversations(sess *layout.Dir) int {
	seen := map[string]bool{}
	for _, folder := range projectFolders(sess) {
		ents, _ := sess.ReadDir(folder)
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() {
				seen[name] = true
			}
		}
	}
	return len(seen)
}

// SessionConversations lists the conversations of the session open as sess, newest first: the canonical
// folder's, and those in other folders (a session used without the mount files transcripts under the sanitized
// name of each cwd). A conversation seen in several folders is listed once. The session wrote every file: each
// is resolved beneath sess with no symlink, and read only if it is a regular file (a FIFO never blocks).
func SessionConversations(sess *layout.Dir) ([]agents.Conversation, error) {
	seen := map[string]bool{}
	var out []agents.Conversation
	for _, folder := range projectFolders(sess) {
		ents, _ := sess.ReadDir(folder)
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".jsonl")
			if !ok || !e.Type().IsRegular() || seen[id] {
				continue
			}
			rel := folder + "/" + e.Name()
			c := agents.Conversation{Agent: name, ID: id, Path: filepath.Join(sess.Name(), rel)}
			f, err := sess.OpenRegular(rel, -1)
			if err != nil {
				continue
			}
			_ = summarise(&c, f)
			f.Close()
			subs, _ := sess.ReadDir(folder + "/" + id + "/subagents")
			for _, s := range subs {
				if s.Type().IsRegular() && strings.HasSuffix(s.Name(), ".jsonl") {
					c.Subagents++
				}
			}
			seen[id] = true
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out, nil
}

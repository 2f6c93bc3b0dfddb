package agents

import (
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// Conversation summarises one conversation of an agent in a session.
type Conversation struct {
	Agent       string    `json:"agent"`
	ID          string    `json:"id"` // the agent's own id for it (Claude's session uuid, the file's base name)
	Path        string    `json:"path"`
	FirstPrompt string    `json:"first_prompt,omitempty"`
	Messages    int       `json:"messages"` // user and assistant lines
	First       time.Time `json:"first,omitzero"`
	Last        time.Time `json:"last,omitzero"`
	Cwds        []string  `json:"cwds,omitempty"`
	Subagents   int       `json:"subagents"`
	Malformed   int       `json:"malformed,omitempty"` // lines that did not parse, skipped
	Size        int64     `json:"size"`                // of all its files, as they are on disk
	// Parts are its other files, after Path's, when it has several (Codex's rollouts of a reverted thread).
	Parts []string `json:"parts,omitempty"`
}

// Rels are the conversation's files beneath sess (listed from it: their paths are sess.Name() joined with them).
func (c *Conversation) Rels(sess *layout.Dir) []string {
	var out []string
	for _, p := range append([]string{c.Path}, c.Parts...) {
		if rel, ok := strings.CutPrefix(p, filepath.Clean(sess.Name())+"/"); ok && rel != "" {
			out = append(out, rel)
		}
	}
	return out
}

// At widens the conversation's time span to t (a zero t is no time).
func (c *Conversation) At(t time.Time) {
	if t.IsZero() {
		return
	}
	if c.First.IsZero() || t.Before(c.First) {
		c.First = t
	}
	if t.After(c.Last) {
		c.Last = t
	}
}

// AddCwd records a cwd the conversation ran in, up to 64 of them.
func (c *Conversation) AddCwd(dir string) {
	if dir != "" && !slices.Contains(c.Cwds, dir) && len(c.Cwds) < 64 {
		c.Cwds = append(c.Cwds, dir)
	}
}

// Conversations lists agent a's conversations in the session open as sess, newest first. Each file is read only
// if it is a regular file reached with no symlink; lines that do not parse are counted as malformed and skipped.
func (a *Agent) Conversations(sess *layout.Dir) ([]Conversation, error) {
	if a.Chats != nil {
		return a.Chats.List(sess)
	}
	var out []Conversation
	byID := map[string]int{} // id -> index in out: Gemini writes a second file of one id on resume
	for _, fs := range a.grouped(sess, a.Dir) {
		c, read := summarise(sess, fs)
		if len(read) == 0 {
			continue
		}
		if i, dup := byID[c.ID]; dup {
			if c.Messages > out[i].Messages {
				out[i] = c
			}
			continue
		}
		byID[c.ID] = len(out)
		out = append(out, c)
	}
	return out, nil
}

// CountConversations counts agent a's conversations in the session without reading them.
func (a *Agent) CountConversations(sess *layout.Dir) int {
	if a.Chats != nil {
		return a.Chats.Count(sess)
	}
	seen := map[string]bool{}
	for _, f := range a.files(sess, a.Dir) {
		seen[f.ID] = true
	}
	return len(seen)
}

// SessionConversations lists the conversations of every agent of among in the session open as sess, newest first.
func SessionConversations(sess *layout.Dir, among []*Agent) ([]Conversation, error) {
	var out []Conversation
	for _, a := range among {
		cs, err := a.Conversations(sess)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out, nil
}

// summarise reads one conversation's files, in order: what each holds (Files.Read), one after the other; read
// are those it could open (none: no conversation). A file that cannot be read to its end (a compressed one over
// its bounds, or damaged) counts as one malformed line more.
func summarise(d *layout.Dir, fs []File) (c Conversation, read []File) {
	c = Conversation{Agent: fs[0].Agent.Name, ID: fs[0].ID}
	for _, f := range fs {
		fh, err := OpenFile(d, f.Rel)
		if err != nil {
			continue
		}
		read = append(read, f)
		if c.Path == "" {
			c.Path = filepath.Join(d.Name(), f.Rel)
		} else {
			c.Parts = append(c.Parts, filepath.Join(d.Name(), f.Rel))
		}
		if st, err := fh.File.Stat(); err == nil {
			c.Size += st.Size()
		}
		f.Agent.Files.Read(&c, fh.Reader)
		if z, ok := fh.Reader.(*inflater); ok && z.err != nil {
			c.Malformed++
		}
		fh.Close()
	}
	return c, read
}

// Holder is a session that holds a conversation's file.
type Holder struct {
	ID    string    `json:"session"`
	Rel   string    `json:"path"` // the file, relative to the session's folder
	Born  time.Time `json:"born"` // when the file was made (its birth time, else its change time)
	Agent string    `json:"agent"`
}

// Less orders two holders of one conversation: the file born first, then the smaller session id. A uuid is any
// session's to write into its own folder, so a session can copy another's conversation or plant a file named
// after one it wants to capture; a copy is always born after its original, so the original keeps it. Birth is
// statx's, which no process can set (the change time where the filesystem keeps none).
func Less(a, b Holder) bool {
	if !a.Born.Equal(b.Born) {
		return a.Born.Before(b.Born)
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Rel < b.Rel
}

// Holds is the Chats of an agent that keeps its conversations in one file of its own (opencode's database): find
// and resume look a conversation up by it.
type Holds interface {
	// Holds reports whether the session open as sess holds conversation id, and the file it is in (relative to
	// the session's folder).
	Holds(sess *layout.Dir, id string) (rel string, ok bool)
}

// Holders returns every session whose agents of among with Files (or Chats that are Holds) hold conversation id, the owner first (Less).
// Claude's transcripts have owners of their own (agents/claude: a fork's copies never take them).
func Holders(store *layout.Store, id string, among []*Agent) ([]Holder, error) {
	if layout.ValidateID(id) != nil {
		return nil, nil
	}
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	return HoldersAmong(store, id, among, ids)
}

// HoldersAmong is Holders looking only in sessions sessionIDs (those the store's index says may hold it).
func HoldersAmong(store *layout.Store, id string, among []*Agent, sessionIDs []string) ([]Holder, error) {
	if layout.ValidateID(id) != nil {
		return nil, nil
	}
	ids := sessionIDs
	var out []Holder
	for _, sid := range ids {
		sess, err := store.OpenSession(sid)
		if err != nil {
			continue
		}
		mine := map[string]int{} // agent -> index in out: a session holds a conversation once (its first file)
		for _, a := range among {
			if h, ok := a.Chats.(Holds); ok {
				if rel, held := h.Holds(sess, id); held {
					if born, ok := sess.Born(rel); ok {
						out = append(out, Holder{ID: sid, Rel: rel, Born: born, Agent: a.Name})
					}
				}
				continue
			}
			if a.Files == nil {
				continue
			}
			for _, f := range a.files(sess, a.Dir) {
				if !matches(sess, f, id) {
					continue
				}
				born, ok := sess.Born(f.Rel)
				if !ok {
					continue
				}
				h := Holder{ID: sid, Rel: f.Rel, Born: born, Agent: a.Name}
				if i, dup := mine[h.Agent]; dup {
					if born.Before(out[i].Born) {
						out[i] = h
					}
					continue
				}
				mine[h.Agent] = len(out)
				out = append(out, h)
			}
		}
		sess.Close()
	}
	sort.Slice(out, func(i, j int) bool { return Less(out[i], out[j]) })
	return out, nil
}

// matches reports whether f is a file of conversation id (one whose name holds only the start of it is checked
// against what it says).
func matches(d *layout.Dir, f File, id string) bool {
	if !f.Agent.Files.Partial {
		return strings.EqualFold(f.ID, id)
	}
	if len(id) < len(f.ID) || !strings.EqualFold(f.ID, id[:len(f.ID)]) {
		return false
	}
	c, read := summarise(d, []File{f})
	return len(read) > 0 && strings.EqualFold(c.ID, id)
}

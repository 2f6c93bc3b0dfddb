package agents

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Conversation is one conversation of any agent in a session.
type Conversation struct {
	Agent string `json:"agent"`
	claude.Conversation
}

// Where each agent keeps a conversation, relative to its folder (checked against the pinned CLIs):
//
//	codex   sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl
//	gemini  tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl, the id in its first line
//	qwen    projects/<project>/chats/<id>.jsonl
var (
	codexFile  = regexp.MustCompile(`^rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)
	geminiFile = regexp.MustCompile(`^session-.*-([0-9a-fA-F]{8})\.jsonl$`)
	qwenFile   = regexp.MustCompile(`^([0-9a-fA-F-]{32,36})\.jsonl$`)
)

// file is one conversation file of an agent in a session: rel beneath the session, and the id its name gives
// (Gemini's names give only the first 8 characters of it).
type file struct {
	agent *Agent
	rel   string
	id    string
}

// files lists the conversation files of the other agents in the session open as sess. Folders are read beneath
// sess, no symlink followed; a session's folders are bounded only by its disk, like Claude's.
func files(sess *layout.Dir) []file {
	var out []file
	for _, a := range All {
		if a != Claude {
			out = append(out, agentFiles(sess, a, a.Dir)...)
		}
	}
	return out
}

// agentFiles lists agent a's conversation files in its folder base beneath d ("" for d itself).
func agentFiles(d *layout.Dir, a *Agent, base string) []file {
	var out []file
	switch a {
	case Codex:
		for _, day := range subdirs(d, path.Join(base, "sessions"), 3) {
			ents, _ := d.ReadDir(day)
			for _, e := range ents {
				if m := codexFile.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
					out = append(out, file{Codex, day + "/" + e.Name(), m[1]})
				}
			}
		}
	case Gemini, Qwen:
		dir, re := "tmp", geminiFile
		if a == Qwen {
			dir, re = "projects", qwenFile
		}
		for _, project := range subdirs(d, path.Join(base, dir), 1) {
			ents, _ := d.ReadDir(project + "/chats")
			for _, e := range ents {
				if m := re.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
					out = append(out, file{a, project + "/chats/" + e.Name(), m[1]})
				}
			}
		}
	}
	return out
}

// subdirs lists the folders depth levels below rel (not through symlinks).
func subdirs(sess *layout.Dir, rel string, depth int) []string {
	level := []string{rel}
	for range depth {
		var next []string
		for _, d := range level {
			ents, _ := sess.ReadDir(d)
			for _, e := range ents {
				if e.IsDir() {
					next = append(next, d+"/"+e.Name())
				}
			}
		}
		level = next
	}
	return level
}

// SessionConversations lists every agent's conversations in the session open as sess, newest first: Claude's
// (claude.SessionConversations) and the other agents'. Each file is read only if it is a regular file reached
// with no symlink; lines that do not parse are counted as malformed and skipped.
func SessionConversations(sess *layout.Dir) ([]Conversation, error) {
	cs, err := claude.SessionConversations(sess)
	if err != nil {
		return nil, err
	}
	out := make([]Conversation, 0, len(cs))
	for _, c := range cs {
		out = append(out, Conversation{Agent: Claude.Name, Conversation: c})
	}
	byID := map[string]int{} // agent/id -> index in out: Gemini writes a second file of one id on resume
	for _, f := range files(sess) {
		c, ok := summarise(sess, f)
		if !ok {
			continue
		}
		key := c.Agent + "/" + c.ID
		if i, dup := byID[key]; dup {
			if c.Messages > out[i].Messages {
				out[i] = c
			}
			continue
		}
		byID[key] = len(out)
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out, nil
}

// CountConversations counts each agent's conversations in the session without reading them (ls lists thousands
// of sessions): agents with none are left out.
func CountConversations(sess *layout.Dir) map[string]int {
	out := map[string]int{}
	if n := claude.CountConversations(sess); n > 0 {
		out[Claude.Name] = n
	}
	seen := map[string]bool{}
	for _, f := range files(sess) {
		if key := f.agent.Name + "/" + f.id; !seen[key] {
			seen[key] = true
			out[f.agent.Name]++
		}
	}
	return out
}

// summarise reads one conversation file.
func summarise(sess *layout.Dir, f file) (Conversation, bool) {
	fh, err := sess.OpenRegular(f.rel, -1)
	if err != nil {
		return Conversation{}, false
	}
	defer fh.Close()
	c := Conversation{Agent: f.agent.Name, Conversation: claude.Conversation{ID: f.id, Path: filepath.Join(sess.Name(), f.rel)}}
	if st, err := fh.Stat(); err == nil {
		c.Size = st.Size()
	}
	read, g := qwenLine, (*geminiChat)(nil)
	switch f.agent {
	case Codex:
		read = codexLine
	case Gemini:
		g = &geminiChat{}
		read = g.line
	}
	c.Malformed, _ = scanLines(fh, func(line []byte) error { return read(&c, line) })
	if g != nil {
		g.finish(&c)
	}
	return c, true
}

func (c *Conversation) at(t time.Time) {
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

func (c *Conversation) cwd(dir string) {
	if dir != "" && !slices.Contains(c.Cwds, dir) && len(c.Cwds) < 64 {
		c.Cwds = append(c.Cwds, dir)
	}
}

// codexLine reads a line of a Codex rollout: {"timestamp", "type", "payload"}. Messages are response items of
// role user or assistant; the user items Codex writes itself (<environment_context> and the like) are not
// prompts.
func codexLine(c *Conversation, line []byte) error {
	var e struct {
		Timestamp time.Time `json:"timestamp"`
		Type      string    `json:"type"`
		Payload   struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Role    string `json:"role"`
			Cwd     string `json:"cwd"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	c.at(e.Timestamp)
	switch e.Type {
	case "session_meta", "turn_context":
		c.cwd(e.Payload.Cwd)
	case "response_item":
		if e.Payload.Type != "message" || (e.Payload.Role != "user" && e.Payload.Role != "assistant") {
			return nil
		}
		var text []string
		for _, p := range e.Payload.Content {
			text = append(text, p.Text)
		}
		t := strings.Join(text, " ")
		if e.Payload.Role == "user" && strings.HasPrefix(strings.TrimSpace(t), "<") {
			return nil // context Codex adds, not the user's words
		}
		c.Messages++
		if c.FirstPrompt == "" && e.Payload.Role == "user" {
			c.FirstPrompt = t
		}
	}
	return nil
}

// qwenLine reads a line of a Qwen chat: {"type", "timestamp", "cwd", "message": {"parts": [{"text"}]}}.
func qwenLine(c *Conversation, line []byte) error {
	var e struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Cwd       string    `json:"cwd"`
		Message   *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	c.at(e.Timestamp)
	c.cwd(e.Cwd)
	if (e.Type != "user" && e.Type != "assistant") || e.Message == nil {
		return nil
	}
	c.Messages++
	if c.FirstPrompt == "" && e.Type == "user" {
		var text []string
		for _, p := range e.Message.Parts {
			text = append(text, p.Text)
		}
		c.FirstPrompt = strings.Join(text, " ")
	}
	return nil
}

// geminiChat follows a Gemini chat: a first line {"sessionId", "startTime", ...}, message lines {"id", "type",
// "timestamp", "content"}, and {"$set": {...}} lines that replace fields, the whole "messages" list included.
type geminiChat struct {
	order []string
	msgs  map[string]geminiMessage
	id    string
}

type geminiMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Content   json.RawMessage `json:"content"`
}

func (g *geminiChat) add(m geminiMessage) {
	if g.msgs == nil {
		g.msgs = map[string]geminiMessage{}
	}
	if _, ok := g.msgs[m.ID]; !ok {
		g.order = append(g.order, m.ID)
	}
	g.msgs[m.ID] = m
}

func (g *geminiChat) line(c *Conversation, line []byte) error {
	var e struct {
		geminiMessage
		SessionID string `json:"sessionId"`
		StartTime time.Time
		Set       *struct {
			Messages  *[]geminiMessage `json:"messages"`
			SessionID string           `json:"sessionId"`
		} `json:"$set"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	switch {
	case e.SessionID != "":
		g.id = e.SessionID
		c.at(e.StartTime)
	case e.Set != nil && e.Set.Messages != nil:
		g.order, g.msgs = nil, nil
		for _, m := range *e.Set.Messages {
			g.add(m)
		}
	case e.ID != "" && e.Type != "":
		g.add(e.geminiMessage)
	}
	return nil
}

// finish counts the messages and takes the id from the first line (the file name holds only its start).
func (g *geminiChat) finish(c *Conversation) {
	if strings.HasPrefix(strings.ToLower(g.id), strings.ToLower(c.ID)) && layout.ValidateID(g.id) == nil {
		c.ID = g.id
	}
	for _, id := range g.order {
		m := g.msgs[id]
		c.at(m.Timestamp)
		if m.Type != "user" && m.Type != "gemini" {
			continue
		}
		text := geminiText(m.Content)
		if m.Type == "user" && strings.HasPrefix(text, "<session_context>") {
			continue // the context Gemini sends first, not the user's words
		}
		c.Messages++
		if c.FirstPrompt == "" && m.Type == "user" {
			c.FirstPrompt = text
		}
	}
}

// geminiText is a message's text: content is a string or a list of parts.
func geminiText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var text []string
	for _, p := range parts {
		text = append(text, p.Text)
	}
	return strings.Join(text, " ")
}

// maxLine bounds one line; a longer one is counted as malformed and skipped.
const maxLine = 64 << 20

// scanLines calls fn for each line of r (without its newline) and counts the lines fn refused or that were too
// long. A torn last line (a writer mid-append) or garbage never stops the scan.
func scanLines(r io.Reader, fn func([]byte) error) (malformed int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var line []byte
		long := false
		for {
			chunk, err := br.ReadSlice('\n')
			if !long && len(line)+len(chunk) <= maxLine {
				line = append(line, chunk...)
			} else {
				long, line = true, nil
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && err != io.EOF {
				return malformed, err
			}
			line = []byte(strings.TrimRight(string(line), "\r\n"))
			switch {
			case long:
				malformed++
			case len(line) > 0:
				if fn(line) != nil {
					malformed++
				}
			}
			if err == io.EOF {
				return malformed, nil
			}
			break
		}
	}
}

// Holder is a session that holds a conversation of an agent other than Claude.
type Holder struct {
	claude.Holder
	Agent string `json:"agent"`
}

// Holders returns every session whose other agents hold conversation id, the owner first by the rule Claude's
// conversations follow (the file born first, then the smaller session id; see claude.Holders).
func Holders(store *layout.Store, id string) ([]Holder, error) {
	if layout.ValidateID(id) != nil {
		return nil, nil
	}
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, sid := range ids {
		sess, err := store.OpenSession(sid)
		if err != nil {
			continue
		}
		mine := map[string]int{} // agent -> index in out: a session holds a conversation once (its first file)
		for _, f := range files(sess) {
			if !matches(sess, f, id) {
				continue
			}
			born, ok := sess.Born(f.rel)
			if !ok {
				continue
			}
			h := Holder{Holder: claude.Holder{ID: sid, Rel: f.rel, Born: born}, Agent: f.agent.Name}
			if i, dup := mine[h.Agent]; dup {
				if born.Before(out[i].Born) {
					out[i] = h
				}
				continue
			}
			mine[h.Agent] = len(out)
			out = append(out, h)
		}
		sess.Close()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Born.Equal(b.Born) {
			return a.Born.Before(b.Born)
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Rel < b.Rel
	})
	return out, nil
}

// matches reports whether f is a file of conversation id (Gemini's are checked against their first line).
func matches(sess *layout.Dir, f file, id string) bool {
	if f.agent != Gemini {
		return strings.EqualFold(f.id, id)
	}
	if len(id) < 8 || !strings.EqualFold(f.id, id[:8]) {
		return false
	}
	c, ok := summarise(sess, f)
	return ok && strings.EqualFold(c.ID, id)
}

package text

import (
	"path"
	"sort"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Files are the files beneath the session (paths relative to sess) that a reading of conversation c of agent a
// reads: the conversation's own file first, then, for Claude, each subagent's transcript the reader would open;
// for Codex, its thread's other rollouts; for opencode, the database and its log. A rendering shows what each of
// them holds, so whoever serves it to others (the mount's text view) grants it no more than every one of them
// grants (mount/nodes/textperm.go).
func Files(sess *layout.Dir, a *agents.Agent, c agents.Conversation) ([]string, error) {
	r, err := readerOf(a)
	if err != nil {
		return nil, err
	}
	rel, err := relOf(sess, c)
	if err != nil {
		return nil, err
	}
	return r.files(sess, rel, c), nil
}

// oneFile is the files of an agent whose conversation is one file (Qwen, Gemini).
func oneFile(rel string) []string { return []string{rel} }

// files of a conversation of lines: its file, or (Codex) the files of its thread.
func (r lineReader) files(sess *layout.Dir, rel string, c agents.Conversation) []string {
	if fs := r.agent.PartsOf(sess, c); len(fs) > 0 {
		return fs
	}
	return oneFile(rel)
}
func (geminiReader) files(_ *layout.Dir, rel string, _ agents.Conversation) []string {
	return oneFile(rel)
}

// files of an opencode conversation: the database, and its log when there is one (a snapshot copies both).
func (opencodeReader) files(sess *layout.Dir, rel string, _ agents.Conversation) []string {
	fs := []string{rel}
	if _, err := sess.Lstat(rel + "-wal"); err == nil {
		fs = append(fs, rel+"-wal")
	}
	return fs
}

// files of a Claude conversation: the transcript and every subagent's transcript beside it (claudeSubagents,
// the same list the reader reads; one the transcript names is read only from there).
func (claudeReader) files(sess *layout.Dir, rel string, c agents.Conversation) []string {
	subs := claudeSubs(rel, c)
	fs := []string{rel}
	for _, id := range claudeSubagents(sess, subs) {
		fs = append(fs, claudeSubagentFile(subs, id))
	}
	return fs
}

// claudeSubs is the folder beneath the session of the subagents of the conversation whose transcript is rel.
func claudeSubs(rel string, c agents.Conversation) string {
	return path.Join(path.Dir(rel), c.ID, "subagents")
}

// claudeSubagentFile is subagent id's transcript in folder subs.
func claudeSubagentFile(subs, id string) string { return path.Join(subs, "agent-"+id+".jsonl") }

// claudeSubagents are the ids of the subagents' transcripts in folder subs (regular files only), sorted.
func claudeSubagents(sess *layout.Dir, subs string) []string {
	ents, _ := sess.ReadDir(subs)
	var ids []string
	for _, e := range ents {
		if id, ok := subagentID(e.Name()); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Package text reads every agent's conversations as entries (prompts, replies, tool calls and results, notes) and
// renders them as readable Markdown: what `sessionfs log` prints, the mount's text view serves and search indexes.
//
// The API (stable; search builds on it):
//
//	type Kind uint8 // Prompt, Reply, ToolCall, ToolResult, Note
//	type Entry struct {
//		Kind     Kind
//		Time     time.Time // zero if the agent wrote none
//		Cwd      string    // the cwd the entry ran in, "" if the agent wrote none (one line, safe)
//		Text     string    // safe for a terminal and bounded (MaxText; a call or a result: one line)
//		Tool     string    // for calls and results
//		Subagent string    // the subagent's id inside one (one line, safe); "" for the main conversation
//		Offset   int64     // where the entry's line starts in its file (bytes; a Codex thread's rollouts: from the
//		                   // first's start, one after the other; opencode: the message's row order)
//	}
//	func Entries(sess *layout.Dir, a *agents.Agent, c agents.Conversation, fn func(Entry) error) error
//	func Render(w io.Writer, sess *layout.Dir, a *agents.Agent, c agents.Conversation) error
//	func Safe(s string, limit int) string  // what a session wrote, made safe for a terminal (keeps newlines)
//	func OneLine(s string, limit int) string
//
// Around it: Printer (Render's Markdown, entry by entry), Log (sessionfs log: Render or JSON lines, -f following
// with inotify), Pick (a conversation of a session by id, start of id, or the latest). c must be listed from the
// same sess (its Path is sess.Name() joined with the file's path beneath it).
//
// Everything a conversation holds was written by the session's untrusted processes: files are opened beneath
// the session's descriptor with no symlink followed and only when regular (agents' readers), opencode's database
// only through its untrusted reader, each line is read up to MaxLine bytes (a longer one becomes a Note), and
// every text is passed through Safe: control characters (ESC, OSC 52, CSI, NUL, C1, bidi overrides) are shown as
// \xNN or \uNNNN, never sent, and invalid UTF-8 is replaced.
package text

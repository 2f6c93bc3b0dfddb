// Package claude is what sessionfs knows about Claude Code: how it names transcript folders, what its transcripts
// hold, who owns a conversation, and the seed files that make a session's .claude its config dir.
package claude

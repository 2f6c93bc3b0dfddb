// Package agents is what sessionfs knows of the coding agents it hosts beside Claude Code (Codex CLI, Gemini CLI,
// Qwen Code): each one's folder in a session, the variable that relocates it there, and which of its folders it
// keys by the working directory, so the mount can show every such name as a view of the session's one folder.
package agents

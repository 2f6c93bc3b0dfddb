// Package merge joins two copies of one file that two places (this store and another machine's, a sandbox's
// Volume) changed since they last agreed, where the file's kind allows it without a conflict: the conversation
// files the agents only append to (Claude's transcripts, Codex's rollouts, Qwen's chats, Kimi's wires, Copilot's
// events), whose copies are joined line by line (Lines). Every other file is the syncs' to decide (the newer kept,
// the other beside it).
package merge

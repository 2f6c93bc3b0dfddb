package agents

import "github.com/sessionfs/sessionfs/layout"

// Tail follows, for watch, an agent that keeps its conversations as rows of a database of its own (opencode's):
// nothing is appended to a file, so watch asks it what is new whenever one of its files changes.
type Tail struct {
	// Files are the files below the agent's folder whose writes may bring new messages (the database, its log).
	Files []string
	// Start begins following; the function it returns is called with the session once at once and after changes
	// to Files, and returns the lines of the messages completed since its last call, each message once: as watch
	// prints them ("<short id> <time> [agent] <role> <text>"), or (asJSON) one JSON object each. Its first call
	// returns the messages already there when fromStart, else none.
	Start func(fromStart, asJSON bool) func(sess *layout.Dir) ([]string, error)
}

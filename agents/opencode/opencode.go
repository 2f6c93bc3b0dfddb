// Package opencode is what sessionfs knows of opencode (sst's, npm opencode-ai): its folders, its variables, its
// database of conversations, and how a conversation follows the cwd sessionfs starts it in.
package opencode

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// DB is opencode's database below its folder in a session: XDG_DATA_HOME/opencode/opencode.db.
const DB = "data/opencode/opencode.db"

const dir = ".opencode"

// Agent is opencode. It has no variable of its own for its folders: it keeps its data (the SQLite database of
// every conversation, its logins, snapshots of the workspace) in $XDG_DATA_HOME/opencode, its settings in
// $XDG_CONFIG_HOME/opencode and its state (prompt history, the last model) in $XDG_STATE_HOME/opencode, so those
// three are set to .opencode/data, .opencode/config and .opencode/state: every program the agent starts gets
// them too. OPENCODE_DB, which moves the database alone, is set to the session's. Its cache (XDG_CACHE_HOME:
// models list, downloaded tools) stays the user's.
//
// opencode keys each conversation by the exact cwd it began in (a column of its database, not a folder), and
// lists only the cwd's own: Launch moves the session's conversations to the cwd sessionfs starts it in.
var Agent = &agents.Agent{
	Name: "opencode", Dir: dir, Var: "XDG_DATA_HOME",
	Also: []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "OPENCODE_DB"},
	In:   map[string]string{"XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state", "OPENCODE_DB": DB},
	// Its logins, as files; the database's account tables hold the console's (export blanks them: Scrub).
	Credentials: []string{"data/opencode/auth.json", "data/opencode/mcp-auth.json"},
	Secrets:     []agents.Secret{{Name: DB, Sidecars: sidecars, Scrub: Scrub}},
	ResumeArg:   "--session",
	Chats:       chats{},
	Launch:      func(sess *layout.Dir, _, cwd string) error { return Follow(sess, cwd) },
	IDPrefix:    "ses_",
	Code:        code,
	Records:     []string{"data/opencode"},
	// opencode run: a message, unattended.
	AsksTurn: func(args []string) bool { return !agents.HelpOnly(args) && len(args) > 0 && args[0] == "run" },
	// opencode 1.18's marks, set in its own environment at start, which the processes it starts inherit.
	ChildVars: []string{"OPENCODE", "OPENCODE_PID"},
}

// Set at init: they refer to Agent themselves (an initialization cycle otherwise).
func init() {
	Agent.Tail = watchTail
	Agent.Import = Import
}

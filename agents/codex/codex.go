// Package codex is what sessionfs knows of Codex CLI: its folder, its variables, and how its rollouts read.
package codex

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// Agent is Codex CLI. It files sessions by date (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, indexed in
// state_*.sqlite): resume by id works from any cwd, so it needs only its own CODEX_HOME. CODEX_SQLITE_HOME moves
// the index, which lives in CODEX_HOME by default. Codex 0.171.0 keeps a thread in more shapes, each read here:
// a reverted thread goes on in rollout-<time>-<thread>_<rollout>.jsonl beside the first (its parts, in the order
// of their names), codex archive moves every rollout of a thread to archived_sessions/ (flat), and with its
// local_thread_store_compression feature (off by default) a rollout untouched for 7 days becomes <name>.zst.
var Agent = &agents.Agent{
	Name: "codex", Dir: dir, Var: "CODEX_HOME", Also: []string{"CODEX_SQLITE_HOME"},
	Credentials: []string{"auth.json"},
	Appends:     true,
	ResumeArg:   "resume",
	Code:        code,
	Records:     []string{"sessions"},
	Launch:      launch,
	// codex exec (e): a task, unattended.
	AsksTurn: func(args []string) bool {
		return !agents.HelpOnly(args) && len(args) > 0 && (args[0] == "exec" || args[0] == "e")
	},
	// Codex's marks on the commands it runs (0.169 to 0.171): its sandbox, and the thread they belong to.
	ChildVars: []string{"CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID"},
	Files: &agents.Files{
		Dir: "sessions", Depth: 3, Also: []string{"archived_sessions"}, Parts: true,
		Name: lazyregexp.New(`^rollout-.*-(` + uuid + `)(?:_` + uuid + `)?\.jsonl(?:\.zst)?$`),
		Read: read, Line: line,
	},
}

const uuid = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`

// Package codex is what sessionfs knows of Codex CLI: its folder, its variables, and how its rollouts read.
package codex

import (
	"regexp"

	"github.com/sessionfs/sessionfs/agents"
)

// Agent is Codex CLI. It files sessions by date (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, indexed in
// state_*.sqlite): resume by id works from any cwd, so it needs only its own CODEX_HOME. CODEX_SQLITE_HOME moves
// the index, which lives in CODEX_HOME by default.
var Agent = &agents.Agent{
	Name: "codex", Dir: ".codex", Var: "CODEX_HOME", Also: []string{"CODEX_SQLITE_HOME"},
	Credentials: []string{"auth.json"},
	ResumeArg:   "resume",
	Code:        code,
	Records:     []string{"sessions"},
	// codex exec (e): a task, unattended.
	AsksTurn: func(args []string) bool {
		return !agents.HelpOnly(args) && len(args) > 0 && (args[0] == "exec" || args[0] == "e")
	},
	// Codex 0.169's marks on the commands it runs: its sandbox, and the thread they belong to.
	ChildVars: []string{"CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_THREAD_ID"},
	Files: &agents.Files{
		Dir: "sessions", Depth: 3,
		Name: regexp.MustCompile(`^rollout-.*-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`),
		Read: read, Line: line,
	},
}

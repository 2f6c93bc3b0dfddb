// Package copilot is what sessionfs knows of GitHub Copilot CLI (npm @github/copilot): its folder, its variables,
// the files it carries out, and how its sessions read.
package copilot

import (
	"slices"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// Agent is Copilot CLI (1.0.102). It keeps everything in one folder, ~/.copilot, that COPILOT_HOME replaces as a
// whole (a session's is .copilot): settings, logins, MCP servers, hooks, plugins, and its sessions, each a folder
// session-state/<uuid>/ whose events.jsonl is the conversation (workspace.yaml, checkpoints and files beside it).
// Nothing in it is named after a cwd: --continue takes the newest session whatever the cwd, and --resume ID finds
// the folder by its name, so it needs no views. session-store.db is an index Copilot derives from the sessions;
// sessionfs never reads it. XDG_STATE_HOME and XDG_CONFIG_HOME only feed a one-time migration into ~/.copilot that
// Copilot skips when COPILOT_HOME is set, which sessionfs always does.
var Agent = &agents.Agent{
	Name: "copilot", Dir: ".copilot", Var: "COPILOT_HOME",
	// config.json holds the GitHub login in plain text (copilotTokens, lastLoggedInUser) where no keychain is
	// reachable, as in a container; mcp-oauth-config/ holds MCP servers' OAuth tokens and secrets; providers.json
	// its own model providers' keys, bearer tokens and headers.
	Credentials: []string{"config.json", "mcp-oauth-config/*", "providers.json"},
	Appends:     true,
	ResumeArg:   "--resume",
	Code:        code,
	Records:     []string{"session-state"},
	AsksTurn:    asksTurn,
	// Copilot CLI 1.0.102's marks on the processes it starts, seen in a real run: its bash tool gets COPILOT_CLI,
	// COPILOT_AGENT_SESSION_ID and the binary's version and folder; hooks get COPILOT_HOOK_DIR and
	// COPILOT_PROJECT_DIR; MCP servers the session id and the version.
	ChildVars: []string{"COPILOT_CLI", "COPILOT_AGENT_SESSION_ID", "COPILOT_CLI_BINARY_VERSION",
		"COPILOT_CLI_RESOLVED_DIST_DIR", "COPILOT_HOOK_DIR", "COPILOT_PROJECT_DIR"},
	Files: &agents.Files{
		Dir: "session-state", Depth: 1, Name: fileName, IDFolder: folderName,
		Read: read, Line: line,
	},
}

// folderName is a session's folder below session-state: its id, a lowercase uuid (v4 from Copilot, or any uuid
// given with --session-id). .session-operation-locks, beside the sessions, is no session.
var folderName = lazyregexp.New(`^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// fileName is the conversation file in a session's folder.
var fileName = lazyregexp.New(`^events\.jsonl$`)

// subcommands are the CLI's commands (copilot help): none of them runs a turn, whatever flags follow.
var subcommands = []string{"app", "login", "help", "init", "config", "update", "version", "workflow", "sessions",
	"memories", "plugin", "mcp", "skill", "instruction", "lsp", "sandbox", "completion"}

// asksTurn: copilot -p (--prompt) runs one prompt unattended and exits, recording the turn in the session's
// events.jsonl; a subcommand (copilot mcp, copilot sessions) runs none.
func asksTurn(args []string) bool {
	if agents.HelpOnly(args) || len(args) > 0 && slices.Contains(subcommands, args[0]) {
		return false
	}
	return agents.TurnArgs(args, "-p", "--prompt")
}

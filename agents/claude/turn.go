package claude

import (
	"slices"

	"github.com/sessionfs/sessionfs/agents"
)

// subcommands are Claude Code's commands that are not a conversation (claude mcp list, claude doctor).
var subcommands = []string{"mcp", "config", "doctor", "update", "install", "setup-token", "plugin", "migrate-installer", "auth"}

// asksTurn: claude -p (--print), unattended: a prompt to answer, in a conversation of its own or one it continues
// (-c, --resume). Interactive runs are not judged: a person may leave without a turn; nor is one told to keep
// nothing (--no-session-persistence).
func asksTurn(args []string) bool {
	if agents.HelpOnly(args) || len(args) > 0 && slices.Contains(subcommands, args[0]) || slices.Contains(args, "--no-session-persistence") {
		return false
	}
	return agents.TurnArgs(args, "-p", "--print")
}

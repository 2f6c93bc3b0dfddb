package claude

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Agent is Claude Code. Its projects folder is the alias rule the mount has always had: every name of Sanitize's
// alphabet is a view of the canonical folder, and nothing else exists there.
var Agent = &agents.Agent{
	Name: name, Dir: layout.ClaudeDir, Var: agents.EnvClaudeConfigDir, Always: true,
	Views: []agents.Views{{
		Dir: "projects", Canonical: layout.CanonicalProject, Name: IsFolderName, Only: true,
	}},
	Credentials: []string{".credentials.json"}, // its OAuth login
	Appends:     true,
	ResumeArg:   "--resume",
	Chats:       chats{},
	Code:        code,
	Records:     []string{"projects"},
	AsksTurn:    asksTurn,
	// Claude Code 2.1.332's environment for the processes it starts (cli.js: CLAUDECODE, the session, the child
	// marker, its pid, its notes), and the entrypoint it sets for itself, which they inherit.
	ChildVars: []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_CHILD_SESSION",
		"CLAUDE_CODE_SESSION_ATTENDED", "CLAUDE_PID", "CLAUDE_CODE_CHILD_NOTES_DIR", "CLAUDE_CODE_STARTER_MAY_HOLD_CONNECTOR_FILE",
		"CLAUDE_EFFORT", "AI_AGENT"},
}

const name = "claude"

// chats reads Claude's transcripts: in every transcript folder of a session, with their subagents' sidecars.
type chats struct{}

func (chats) List(sess *layout.Dir) ([]agents.Conversation, error) { return SessionConversations(sess) }

func (chats) Count(sess *layout.Dir) int { return CountConversations(sess) }

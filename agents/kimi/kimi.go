// Package kimi is what sessionfs knows of Kimi Code (npm @moonshot-ai/kimi-code): its folder, its variable, the
// files it carries out, how its sessions read, and how a launch moves them to the cwd it starts in.
package kimi

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// Agent is Kimi Code. It keeps everything in one folder, ~/.kimi-code, that KIMI_CODE_HOME replaces as a whole (a
// session's is .kimi-code): its settings, logins, plugins, skills, and its sessions (conversations), each a
// folder sessions/wd_<cwd's name>_<hash of the cwd>/session_<uuid>/ whose state.json names the cwd it belongs to
// and whose agents/main/wire.jsonl is the conversation. Kimi refuses to resume a session from a cwd other than
// its state.json's ("created under a different directory"), and --continue takes only the cwd's own: Launch
// moves the session's conversations to the cwd sessionfs starts Kimi in, so both work from any folder.
var Agent = &agents.Agent{
	Name: "kimi", Dir: dir, Var: "KIMI_CODE_HOME",
	// credentials/ holds its OAuth tokens, one file a login; server.token is the bearer token of its kimi server
	// (which runs the agent for whoever holds it); config.toml may hold a provider's key (Secrets).
	Credentials: []string{"credentials/*", "server.token"},
	Secrets:     []agents.Secret{{Name: "config.toml", Scrub: scrubConfig}},
	Appends:     true,
	ResumeArg:   "--session",
	IDPrefix:    "session_",
	Code:        code,
	Records:     []string{"sessions"},
	AsksTurn:    asksTurn,
	Launch:      func(sess *layout.Dir, _, cwd string) error { return Follow(sess, cwd) },
	Imported:    imported,
	// Kimi Code 2.1.0 marks none of the processes it starts as its own (its shell tool adds NO_COLOR, TERM,
	// GIT_TERMINAL_PROMPT and SHELL; hooks get its environment as it is): only the status line's and a plugin's.
	ChildVars: []string{"KIMI_CODE_STATUS_LINE", "KIMI_PLUGIN_ROOT"},
	Files: &agents.Files{
		Dir: sessionsDir, Depth: 2, Sub: mainAgent, Name: wireName, IDFolder: sessionFolder,
		Read: read, Line: line,
	},
}

// dir is Kimi's folder in a session, sessionsDir the folder of its conversations in it.
const dir, sessionsDir = ".kimi-code", "sessions"

// mainAgent is the folder of a conversation's main agent in its session folder: its wire is the conversation.
const mainAgent = "agents/main"

// wireName is a conversation's file in its agent's folder: main's is the conversation, a subagent's folder holds
// one of its own.
var wireName = lazyregexp.New(`^wire\.jsonl$`)

// sessionFolder is a session's folder, session_<uuid>: its whole name is the id kimi -r takes.
var sessionFolder = lazyregexp.New(`^(session_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// asksTurn: kimi -p (--prompt) answers the prompt it is given and exits, recording the turn in a session.
func asksTurn(args []string) bool {
	return !agents.HelpOnly(args) && agents.TurnArgs(args, "-p", "--prompt")
}

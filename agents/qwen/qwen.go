// Package qwen is what sessionfs knows of Qwen Code: its folder, its variables, the names it gives a cwd, and how
// its chats read.
package qwen

import (
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// Agent is Qwen Code. It keeps conversations in projects/<Folder of the cwd>/chats and scratch files in
// tmp/<sha256 of the cwd>. QWEN_RUNTIME_DIR, when set, takes projects/ and tmp/ (the chats) out of QWEN_HOME.
var Agent = &agents.Agent{
	Name: "qwen", Dir: ".qwen", Var: "QWEN_HOME", Also: []string{"QWEN_RUNTIME_DIR"}, Views: []agents.Views{
		{Dir: "projects", Canonical: Folder(agents.CanonicalCwd), Name: claude.IsFolderName},
		{Dir: "tmp", Canonical: agents.PathHash(agents.CanonicalCwd), Name: agents.IsHash},
	},
	Credentials: []string{"oauth_creds.json", "mcp-oauth-tokens.json"},
	Appends:     true,
	ResumeArg:   "--resume",
	Code:        gemini.Code(".qwen"),
	Records:     []string{"projects"},
	AsksTurn:    gemini.PromptAsked,
	// Qwen Code 0.24's marks on its shells' and hooks' processes, and on the process it relaunches itself as.
	ChildVars: []string{"QWEN_CODE", "QWEN_CODE_NO_RELAUNCH", "QWEN_CODE_SESSION_ID", "QWEN_CODE_PROJECT_DIR"},
	Files: &agents.Files{
		Dir: "projects", Depth: 1, Sub: "chats", Name: lazyregexp.New(`^([0-9a-fA-F-]{32,36})\.jsonl$`),
		Read: read, Line: line,
		InProject: func(_ *layout.Dir, folder, project string) bool { return folder == Folder(project) },
	},
}

// Folder is the folder name Qwen Code gives a cwd under projects/: every UTF-16 code unit that is not
// [A-Za-z0-9] becomes '-' (an astral character is two units, so two dashes). Unlike Claude it never truncates,
// so a long path makes a name the filesystem refuses, for Qwen itself too.
func Folder(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r > 0xffff:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Package pi is what sessionfs knows of pi (npm @earendil-works/pi-coding-agent): its folder, its variables, the
// names it gives a cwd, the files it carries out, and how its sessions read.
package pi

import (
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// Agent is pi. It keeps everything in one folder, ~/.pi/agent, that PI_CODING_AGENT_DIR replaces as a whole (a
// session's is .pi): settings, logins, models, extensions, and its sessions (conversations), each one JSONL file
// filed by the cwd it began in, sessions/<Folder of the cwd>/<time>_<id>.jsonl. Its --continue and --session ID
// look only in the cwd's own folder (then, for an id, in every folder, offering to fork what it finds there), so
// through the mount every cwd's folder is a view of the workspace's. PI_CODING_AGENT_SESSION_DIR would file every
// cwd's sessions flat in one folder outside the session: it is set empty, which pi ignores.
var Agent = &agents.Agent{
	Name: "pi", Dir: ".pi", HomeDir: ".pi/agent", Var: "PI_CODING_AGENT_DIR", Clear: []string{"PI_CODING_AGENT_SESSION_DIR"},
	Views: []agents.Views{
		{Dir: "sessions", Canonical: Folder(agents.CanonicalCwd), Name: IsFolder},
	},
	// auth.json holds API keys and OAuth tokens, mcp-auth.json MCP servers' tokens, oauth.json the logins of pi
	// before auth.json (it moves them there).
	Credentials: []string{"auth.json", "mcp-auth.json", "oauth.json"},
	ResumeArg:   "--session",
	Code:        code,
	Records:     []string{"sessions"},
	AsksTurn:    asksTurn,
	// pi 1.6.0's marks on the processes it starts (docs/environment-variables.md): the markers its CLI sets, and the
	// session state its bash tool passes to the commands the model runs.
	ChildVars: []string{"PI_CODING_AGENT", "PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL",
		"PI_REASONING_LEVEL"},
	Files: &agents.Files{
		Dir: "sessions", Depth: 1, Name: fileName,
		Read: read, Line: line,
		InProject: func(_ *layout.Dir, folder, project string) bool { return folder == Folder(project) },
	},
}

// fileName is a session file's name, <the ISO time it began, ':' and '.' as '-'>_<session id>.jsonl: the id is a
// uuidv7, or one given with --session-id (alphanumerics, '.', '_' and '-', starting and ending with an
// alphanumeric).
var fileName = lazyregexp.New(`^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_([A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?)\.jsonl$`)

// Folder is the folder name pi gives a cwd under sessions/ (getDefaultSessionDirPath in its session-manager.js):
// the path without its leading separator, every '/', '\' and ':' as '-', between "--" and "--". Every other
// character stays as it is, and nothing is truncated.
func Folder(cwd string) string {
	p := cwd
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		p = p[1:]
	}
	return "--" + strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(p) + "--"
}

// IsFolder reports whether name could be a Folder: what pi makes of any cwd begins and ends with "--".
func IsFolder(name string) bool {
	return len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--") && !strings.ContainsRune(name, 0)
}

// asksTurn: pi -p (--print) answers the prompts it is given and exits, recording the turn in its session, unless
// --no-session keeps it in memory.
func asksTurn(args []string) bool {
	if agents.HelpOnly(args) || !agents.TurnArgs(args, "-p", "--print") {
		return false
	}
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	return !slices.Contains(args[:end], "--no-session")
}

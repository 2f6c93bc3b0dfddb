package agents

import (
	"strings"

	"github.com/sessionfs/sessionfs/layout"
)

// The variables that point a process at its session. Each agent's own (CODEX_HOME, ...) are its descriptor's Var
// and Also.
const (
	// EnvSession is the session's id.
	EnvSession = "SESSIONFS_SESSION"
	// EnvSessionDir is the session's folder as the process sees it (/session in a container).
	EnvSessionDir = "SESSION_DIR"
	// EnvClaudeConfigDir is how Claude Code is told where its config and transcripts live.
	EnvClaudeConfigDir = "CLAUDE_CONFIG_DIR"
	// EnvClaudeProjectDirName pins the projects folder Claude Code files transcripts under, whatever the cwd
	// (Claude Code 2.1.234 and later, with CLAUDE_CONFIG_DIR set). sessionfs sets it to the canonical folder, so
	// new CLIs resume from any cwd with no mount at all (a Modal sandbox, a plain bind); older CLIs ignore it and
	// get the views.
	EnvClaudeProjectDirName = "CLAUDE_CODE_PROJECT_DIR_NAME"
)

// SessionEnv is the environment of a process in session id that sees the session's folder at root ("/session" in
// a container): base first (os.Environ() on this host), then the session's variables, Claude's (every process
// gets them, whatever its agent), agent a's (nil: none more), and extra last (the user's -e pairs). A later value
// of a key replaces the earlier one in its place, so the result never holds a key twice.
func SessionEnv(base []string, id, root string, a *Agent, extra ...string) []string {
	p := layout.Derive(root)
	vars := append(append([]string{}, base...), EnvSession+"="+id, EnvSessionDir+"="+p.Root,
		EnvClaudeConfigDir+"="+p.Claude, EnvClaudeProjectDirName+"="+layout.CanonicalProject)
	if a != nil {
		vars = append(vars, a.Env(root)...) // Claude's own repeats what is set already
	}
	vars = append(vars, extra...)
	seen := make(map[string]int, len(vars))
	out := make([]string, 0, len(vars))
	for _, kv := range vars {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

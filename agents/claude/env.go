package claude

import (
	"os"
	"strings"

	"github.com/sessionfs/sessionfs/layout"
)

// EnvConfigDir is how Claude Code is told where its config and transcripts live.
const EnvConfigDir = "CLAUDE_CONFIG_DIR"

// EnvProjectDirName pins the projects folder Claude Code files transcripts under, whatever the cwd (Claude Code
// 2.1.234 and later, with CLAUDE_CONFIG_DIR set). sessionfs sets it to the canonical folder, so new CLIs resume
// from any cwd with no mount at all (a Modal sandbox, a plain bind); older CLIs ignore it and get the views.
const EnvProjectDirName = "CLAUDE_CODE_PROJECT_DIR_NAME"

// ProjectDirName is the value sessionfs gives EnvProjectDirName: the canonical transcript folder.
const ProjectDirName = layout.CanonicalProject

// Env is the environment a session's process gets: base (usually os.Environ()) with CLAUDE_CONFIG_DIR pointing at
// the session's .claude, and extra K=V pairs applied last. Later values replace earlier ones, so the result never
// holds a key twice.
func Env(base []string, configDir string, extra ...string) []string {
	vars := append(append(append([]string{}, base...), EnvConfigDir+"="+configDir, EnvProjectDirName+"="+ProjectDirName), extra...)
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

// ProcessEnv is Env over this process's environment.
func ProcessEnv(configDir string, extra ...string) []string {
	return Env(os.Environ(), configDir, extra...)
}

package claude

import (
	"os"
	"strings"
)

// EnvConfigDir is how Claude Code is told where its config and transcripts live.
const EnvConfigDir = "CLAUDE_CONFIG_DIR"

// Env is the environment a session's process gets: base (usually os.Environ()) with CLAUDE_CONFIG_DIR pointing at
// the session's .claude, and extra K=V pairs applied last. Later values replace earlier ones, so the result never
// holds a key twice.
func Env(base []string, configDir string, extra ...string) []string {
	vars := append(append(append([]string{}, base...), EnvConfigDir+"="+configDir), extra...)
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

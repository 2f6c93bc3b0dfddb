package agents

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// CodeFile is a file (or folder) in a session whose content an agent carries out when it starts: its hooks, its
// helpers, its MCP servers, its env, its plugins. A session's processes write it, so on this host it runs only
// once the user approved that content (package trust); in a container or a sandbox it runs where it was written.
type CodeFile struct {
	// Path is below the agent's folder (Dir), or, when Project, below each folder from the session's root down to
	// the run's cwd (a workspace's own .claude/settings.json, .mcp.json, .env).
	Path    string
	Project bool
	// Tree: every file beneath Path counts, whole (plugins, extensions), but Skip's: files beneath Path the agent
	// writes itself that run nothing (Qwen's extension-enablement.json, which only names extensions the tree holds).
	Tree bool
	Skip []string
	// Part is the content the agent acts on, canonical, from the file's bytes (nil: all of them). It drops what
	// the agent rewrites as it runs and what it only displays, so an approval holds across the agent's own runs.
	// ok is false when the bytes do not parse: then they count whole.
	Part func(b []byte) (part []byte, ok bool)
}

// JSONWithout is a Part for a JSON settings file: the object less its inert keys (what only changes how the agent
// looks or which model it asks; a dotted name is a key inside an object) and less the env entries SafeEnv holds; every other key counts, known or not.
func JSONWithout(inert ...string) func([]byte) ([]byte, bool) {
	return func(b []byte) ([]byte, bool) {
		var m map[string]any
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, true
		}
		if json.Unmarshal(b, &m) != nil || m == nil {
			return nil, false
		}
		for _, k := range inert {
			deletePath(m, strings.Split(k, "."))
		}
		if env, ok := m["env"].(map[string]any); ok {
			maps.DeleteFunc(env, SafeEnv)
			if len(env) == 0 {
				delete(m, "env")
			}
		}
		return canonical(m)
	}
}

// deletePath deletes the key at keys (a dotted inert name, "security.auth.selectedType") from m, and each object
// it leaves empty.
func deletePath(m map[string]any, keys []string) {
	if len(keys) == 1 {
		delete(m, keys[0])
		return
	}
	sub, ok := m[keys[0]].(map[string]any)
	if !ok {
		return
	}
	deletePath(sub, keys[1:])
	if len(sub) == 0 {
		delete(m, keys[0])
	}
}

// JSONOnly is a Part for a JSON state file the agent rewrites as it runs (Claude's .claude.json): only the keys
// named count, at the top and in each entry of the object under per (its projects, by folder).
func JSONOnly(top []string, per string, perKeys []string) func([]byte) ([]byte, bool) {
	return func(b []byte) ([]byte, bool) {
		var m map[string]any
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, true
		}
		if json.Unmarshal(b, &m) != nil || m == nil {
			return nil, false
		}
		out := map[string]any{}
		for _, k := range top {
			if v, ok := m[k]; ok && !empty(v) {
				out[k] = v
			}
		}
		entries, _ := m[per].(map[string]any)
		kept := map[string]any{}
		for name, e := range entries {
			e, _ := e.(map[string]any)
			pick := map[string]any{}
			for _, k := range perKeys {
				if v, ok := e[k]; ok && !empty(v) {
					pick[k] = v
				}
			}
			if len(pick) > 0 {
				kept[name] = pick
			}
		}
		if len(kept) > 0 {
			out[per] = kept
		}
		return canonical(out)
	}
}

// canonical is m as JSON with sorted keys (encoding/json sorts a map's), nil when m is empty: a file with nothing
// that runs needs no approval.
func canonical(m map[string]any) ([]byte, bool) {
	if len(m) == 0 {
		return nil, true
	}
	b, err := json.MarshalIndent(m, "", "  ")
	return b, err == nil
}

// empty reports a JSON value that grants nothing: null, false, "", an empty list or object.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// safeEnvNames are settings env variables that only switch a behaviour or set a number or a model's name: none
// names a program, a library, a URL, a header or a credential. Seeding copies only these (with a value SafeEnv
// accepts), and an approval does not cover them, since they run nothing.
var safeEnvNames = []string{
	"DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER", "DISABLE_BUG_COMMAND",
	"DISABLE_COST_WARNINGS", "DISABLE_NON_ESSENTIAL_MODEL_CALLS", "DISABLE_PROMPT_CACHING",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE",
	"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_SUBAGENT_MODEL",
	"CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR",
	"BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "BASH_MAX_OUTPUT_LENGTH", "MAX_THINKING_TOKENS",
	"MAX_MCP_OUTPUT_TOKENS", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
	"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
	"USE_BUILTIN_RIPGREP",
}

// safeEnvValue is a value that is a flag, a number or a model's name: no path, no URL, no spaces, no quotes.
var safeEnvValue = lazyregexp.New(`^[A-Za-z0-9._@:-]{0,128}$`)

// SafeEnv reports whether the settings env entry k=v runs nothing: a name of safeEnvNames with a plain value.
func SafeEnv(k string, v any) bool {
	if !slices.Contains(safeEnvNames, k) {
		return false
	}
	switch v := v.(type) {
	case string:
		return safeEnvValue.MatchString(v)
	case float64, bool:
		return true
	}
	return false
}

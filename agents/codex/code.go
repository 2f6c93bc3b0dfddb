package codex

import (
	"encoding/json"

	"github.com/pelletier/go-toml/v2"

	"github.com/sessionfs/sessionfs/agents"
)

// inertConfig are config.toml tables and keys Codex writes itself (the folders it trusts, the notices it showed)
// or that only pick a model or a look: no approval covers them. Every other key counts: notify, mcp_servers,
// model_providers, shell_environment_policy, profiles, hooks, sandbox settings.
var inertConfig = []string{"projects", "notice", "model", "model_reasoning_effort", "model_reasoning_summary", "tui"}

// configCode is the part of a config.toml Codex acts on, as canonical JSON.
func configCode(b []byte) ([]byte, bool) {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil, false
	}
	for _, k := range inertConfig {
		delete(m, k)
	}
	if len(m) == 0 {
		return nil, true
	}
	out, err := json.MarshalIndent(m, "", "  ")
	return out, err == nil
}

// code are the files Codex carries out when it starts: its config (its own and a project's) and the .env it loads
// from CODEX_HOME.
var code = []agents.CodeFile{
	{Path: "config.toml", Part: configCode},
	{Path: ".env"},
	{Path: ".codex/config.toml", Project: true, Part: configCode},
}

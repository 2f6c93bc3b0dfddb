package kimi

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/pelletier/go-toml/v2"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// code are the files Kimi Code 2.1.0 carries out: config.toml (its hooks, run through a shell at sixteen events;
// its providers, whose base URLs receive the keys; its status line command and MCP settings), its MCP servers
// (mcp.json), the plugins and skills it installed, its TUI settings' editor; and a project's own .kimi-code/mcp.json
// and .mcp.json, which it starts once the folder is trusted.
var code = []agents.CodeFile{
	{Path: "config.toml"},
	{Path: "mcp.json"},
	{Path: "plugins", Tree: true},
	{Path: "skills", Tree: true},
	{Path: "tui.toml", Part: editor},
	{Path: ".kimi-code/mcp.json", Project: true},
	{Path: ".mcp.json", Project: true},
}

// editor is the part of tui.toml Kimi acts on: the editor it starts (a command); the theme and the upgrade
// choices only change how it looks and what it fetches.
func editor(b []byte) ([]byte, bool) {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil, false
	}
	keep := map[string]any{}
	for k, v := range m {
		if k == "editor" {
			keep[k] = v
		}
	}
	if len(keep) == 0 {
		return nil, true
	}
	out, err := toml.Marshal(keep)
	return out, err == nil
}

// maxConfig bounds the config.toml an export scrubs.
const maxConfig = 4 << 20

// secretKeys are the keys of a provider in config.toml that hold its credentials.
var secretKeys = []string{"api_key", "oauth"}

// scrubConfig is the session's config.toml without its providers' keys and logins (an export packs this instead):
// every other setting stays. A file that does not parse as TOML is left out whole: what it holds cannot be told.
func scrubConfig(sess *layout.Dir) ([]byte, []string, error) {
	b, err := sess.ReadRegular(dir+"/config.toml", maxConfig)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("not TOML, so a key in it cannot be told apart: %w", err)
	}
	var dropped []string
	providers, _ := m["providers"].(map[string]any)
	for name, p := range providers {
		p, ok := p.(map[string]any)
		if !ok {
			continue
		}
		for k := range p {
			if slices.Contains(secretKeys, k) {
				delete(p, k)
				dropped = append(dropped, fmt.Sprintf("providers.%s.%s", name, k))
			}
		}
	}
	if len(dropped) == 0 {
		return b, nil, nil
	}
	slices.Sort(dropped)
	var out bytes.Buffer
	if err := toml.NewEncoder(&out).Encode(m); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), dropped, nil
}

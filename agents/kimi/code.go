package kimi

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// code are the files Kimi Code 2.1.0 carries out: config.toml (its hooks, run through a shell at sixteen events;
// its providers, whose base URLs receive the keys; its status line command and MCP settings), its MCP servers
// (mcp.json), the plugins and skills it installed, tui.toml's editor and status line commands; and a project's
// own .kimi-code/mcp.json and .mcp.json, which it starts once the folder is trusted, and its skills and agents
// (.kimi-code/skills, .kimi-code/agents, .agents/skills), which bring scripts of their own.
var code = []agents.CodeFile{
	{Path: "config.toml"},
	{Path: "mcp.json"},
	{Path: "plugins", Tree: true},
	{Path: "skills", Tree: true},
	{Path: "tui.toml", Part: tuiCommands},
	{Path: ".kimi-code/mcp.json", Project: true},
	{Path: ".mcp.json", Project: true},
	{Path: ".kimi-code/skills", Project: true, Tree: true},
	{Path: ".kimi-code/agents", Project: true, Tree: true},
	{Path: ".agents/skills", Project: true, Tree: true},
}

// tuiCommands is the part of tui.toml Kimi acts on: the editor it starts and the status line command it runs
// (normalizeTuiConfig: status_line.command, run at every interactive launch); the theme and the upgrade choices
// only change how it looks and what it fetches.
func tuiCommands(b []byte) ([]byte, bool) {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil, false
	}
	keep := map[string]any{}
	for k, v := range m {
		if n := normalKey(k); n == "editor" || n == "statusline" {
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

// secretKeys are the keys, in any table of config.toml, that hold a credential or send one (by normalKey: Kimi
// reads "api_key" and "apiKey" alike): a provider's or a service's key and login, a registry's key
// (providers.<name>.source.apiKey, which Kimi writes itself), the headers sent with every request (an
// Authorization header is a key) and the environment given to a server.
var secretKeys = []string{"apikey", "oauth", "bearertoken", "token", "accesstoken", "refreshtoken", "secret",
	"password", "authorization", "customheaders", "headers", "env"}

// normalKey is a TOML key as Kimi matches it (snakeToCamel): case and underscores aside.
func normalKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
}

// scrubConfig is the session's config.toml without its credentials (an export packs this instead): every key of
// secretKeys, in any table, however deep. A file that does not parse as TOML is left out whole: what it holds
// cannot be told.
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
	var scrub func(prefix string, v any)
	scrub = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if slices.Contains(secretKeys, normalKey(k)) {
					delete(v, k)
					dropped = append(dropped, prefix+k)
					continue
				}
				scrub(prefix+k+".", e)
			}
		case []any:
			for i, e := range v {
				scrub(fmt.Sprintf("%s%d.", prefix, i), e)
			}
		}
	}
	scrub("", m)
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

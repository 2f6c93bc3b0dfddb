package pi

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
)

// settings is the part of a settings.json pi acts on: everything (its packages and extensions, its shell and npm
// commands, its session folder, whether it trusts projects) less what only picks a look or a model and what pi
// writes itself as it runs.
var settings = agents.JSONWithout("$schema", "theme", "lastChangelogVersion", "defaultProvider", "defaultModel",
	"defaultThinkingLevel", "deviceId")

// code are the files pi 1.6.0 carries out when it starts: its settings; models.json, whose providers' keys and
// headers may be "!command" (run through a shell) and whose base URLs receive the keys; the commands among
// auth.json's keys; its MCP servers; extensions, tools, the packages it installed (npm/, git/) and the helper
// binaries it fetched (bin/: fd, rg); and a project's own .pi (settings, MCP servers, extensions, packages), which
// pi loads once the project is trusted, a choice it records in the session's trust.json.
var code = []agents.CodeFile{
	{Path: "settings.json", Part: settings},
	{Path: "models.json"},
	{Path: "auth.json", Part: commands},
	{Path: "mcp.json"},
	{Path: "extensions", Tree: true},
	{Path: "tools", Tree: true},
	{Path: "bin", Tree: true},
	{Path: "npm", Tree: true},
	{Path: "git", Tree: true},
	{Path: ".pi/settings.json", Project: true, Part: settings},
	{Path: ".pi/mcp.json", Project: true},
	{Path: ".pi/extensions", Project: true, Tree: true},
	{Path: ".pi/npm", Project: true, Tree: true},
	{Path: ".pi/git", Project: true, Tree: true},
}

// commands is the part of auth.json pi acts on: the values it runs as a command ("!command"), each with the path
// of keys it is found at; the keys and tokens themselves are no code. A file with none needs no approval.
func commands(b []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, true
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	found := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(prefix+"/"+k, e)
			}
		case []any:
			for _, e := range v {
				walk(prefix+"/[]", e)
			}
		case string:
			if strings.HasPrefix(strings.TrimSpace(v), "!") {
				found[prefix] = v
			}
		}
	}
	walk("", v)
	if len(found) == 0 {
		return nil, true
	}
	out, err := json.MarshalIndent(found, "", "  ")
	return out, err == nil
}

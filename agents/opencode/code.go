package opencode

import "github.com/sessionfs/sessionfs/agents"

// code are the files opencode carries out when it starts, in its config folder (XDG_CONFIG_HOME/opencode) and in
// each project folder up from its cwd: its config (MCP servers, formatter and LSP commands, plugins named), and
// the folders of JavaScript plugins and tools, agents and commands (whose templates run !`shell` lines). Its
// node_modules, which it installs itself, are not read: what it loads from there a config or plugin names.
var code = func() []agents.CodeFile {
	settings := agents.JSONWithout("$schema", "theme", "model", "small_model")
	var out []agents.CodeFile
	for _, f := range []string{"opencode.json", "opencode.jsonc", "config.json"} {
		out = append(out, agents.CodeFile{Path: "config/opencode/" + f, Part: settings})
	}
	for _, f := range []string{"opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"} {
		out = append(out, agents.CodeFile{Path: f, Project: true, Part: settings})
	}
	for _, d := range []string{"plugin", "plugins", "tool", "tools", "agent", "agents", "command", "commands"} {
		out = append(out, agents.CodeFile{Path: "config/opencode/" + d, Tree: true},
			agents.CodeFile{Path: ".opencode/" + d, Project: true, Tree: true})
	}
	return out
}()

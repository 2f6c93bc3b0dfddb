package gemini

import "github.com/sessionfs/sessionfs/agents"

// Code are the files Gemini CLI (and Qwen Code, its fork, in its own folder) carries out when it starts: its
// settings (MCP servers, tool discovery and call commands, hooks, its editor), the .env it loads (its folder's, a
// project's, and the first .env above the cwd), and extensions and commands (shell lines in !{...}). The look of
// it (ui, ide's nudges) and the login it chose, which it saves itself, are no code.
func Code(dir string) []agents.CodeFile {
	settings := agents.JSONWithout("$schema", "ui", "ide", "security.auth.selectedType")
	return []agents.CodeFile{
		{Path: "settings.json", Part: settings},
		{Path: ".env"},
		{Path: "extensions", Tree: true, Skip: []string{"extension-enablement.json"}},
		{Path: "commands", Tree: true},
		{Path: dir + "/settings.json", Project: true, Part: settings},
		{Path: dir + "/.env", Project: true},
		{Path: ".env", Project: true},
		{Path: dir + "/extensions", Project: true, Tree: true},
		{Path: dir + "/commands", Project: true, Tree: true},
	}
}

package claude

import "github.com/sessionfs/sessionfs/agents"

// inertSettings are settings.json keys that only change how Claude Code looks, which model it asks or how long it
// keeps transcripts (sessionfs's own seed): no approval covers them. Every other key counts, known or not: hooks,
// apiKeyHelper, statusLine, the AWS and OTEL helpers, env, permissions, MCP and plugin settings.
var inertSettings = []string{
	"$schema", "cleanupPeriodDays", "model", "theme", "outputStyle", "includeCoAuthoredBy", "spinnerTipsEnabled",
	"alwaysThinkingEnabled", "verbose", "language", "autoUpdates", "feedbackSurveyState", "showTurnDuration",
}

// settingsCode is the part of a settings file Claude Code acts on.
var settingsCode = agents.JSONWithout(inertSettings...)

// globalConfig is the part of Claude's global config (.claude.json, which it rewrites as it runs) that runs
// something: its MCP servers and what lets a project's run.
var globalConfig = agents.JSONOnly([]string{"mcpServers"}, "projects",
	[]string{"mcpServers", "enabledMcpjsonServers", "enableAllProjectMcpServers", "allowedTools"})

// code are the files Claude Code carries out when it starts: its settings (the session's and each project's),
// the MCP servers of .claude.json (which it rewrites as it runs: only those keys count) and .mcp.json, and the
// folders whose files hold hooks, commands with shell lines, or plugins.
var code = []agents.CodeFile{
	{Path: "settings.json", Part: settingsCode},
	{Path: "settings.local.json", Part: settingsCode},
	{Path: ".claude.json", Part: globalConfig},
	{Path: ".config.json", Part: globalConfig}, // the legacy name, which Claude still prefers when it is there
	{Path: "hooks", Tree: true},
	{Path: "output-styles", Tree: true},
	{Path: "rules", Tree: true},
	{Path: "workflows", Tree: true},
	{Path: "routines", Tree: true},
	{Path: "scheduled_tasks.json"},
	{Path: "launch.json"},
	{Path: "daemon.json"},
	// plugins/store, which Claude 2.1.332 writes itself at every start (its built-in plugins' state), is left out.
	{Path: "plugins/cache", Tree: true},
	{Path: "plugins/marketplaces", Tree: true},
	{Path: "plugins/repos", Tree: true},
	{Path: "plugins/installed_plugins.json"},
	{Path: "plugins/known_marketplaces.json"},
	{Path: "commands", Tree: true},
	{Path: "agents", Tree: true},
	{Path: "skills", Tree: true},
	{Path: ".claude/settings.json", Project: true, Part: settingsCode},
	{Path: ".claude/settings.local.json", Project: true, Part: settingsCode},
	{Path: ".mcp.json", Project: true, Part: agents.JSONWithout()},
	{Path: ".claude/commands", Project: true, Tree: true},
	{Path: ".claude/agents", Project: true, Tree: true},
	{Path: ".claude/skills", Project: true, Tree: true},
}

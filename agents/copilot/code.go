package copilot

import "github.com/sessionfs/sessionfs/agents"

// settings is the part of a settings.json Copilot acts on: everything (its hooks and disableAllHooks, the status
// line command it runs, its MCP servers and plugins, the URLs and tools it allows, its sandbox) less what only picks
// a look or a model and what Copilot writes itself as it runs (the folders the user trusted, its first launch and
// the tips it showed).
var settings = agents.JSONWithout("$schema", "theme", "banner", "bannerStyle", "showTipsOnStartup", "beep",
	"beepOnSchedule", "notifications", "terminalNotifications", "renderMarkdown", "renderHexColors", "inlineImages",
	"screenReader", "mouse", "scrollbar", "footer", "sidebar", "tabs", "streamerMode", "updateTerminalTitle",
	"terminalProgress", "editorMode", "compactPaste", "copyOnSelect", "model", "modelProviderId", "effortLevel",
	"contextTier", "planModel", "planModelProviderId", "planEffortLevel", "planContextTier", "trustedFolders",
	"firstLaunchAt", "appTipShown", "reasoningSummariesCleanupDone")

// code are the files Copilot CLI 1.0.102 carries out when it starts (its help, its bundle cli-main.js and a real
// run: an MCP server of mcp-config.json and the hooks of hooks/ ran in a -p run): its settings (hooks inline, the
// status line command); its MCP servers and language servers; hooks; custom agents, skills, installed plugins and
// extensions, which bring tools, MCP servers and scripts of their own. A project's own: its hooks
// (.github/hooks), settings (.github/copilot/settings.json and settings.local.json), MCP servers (.mcp.json and
// .github/mcp.json; .vscode/mcp.json is no longer read, only warned about) and extensions (.github/extensions).
// config.json is no code: Copilot keeps its own state and the login there.
var code = []agents.CodeFile{
	{Path: "settings.json", Part: settings},
	{Path: "mcp-config.json"},
	{Path: "lsp-config.json"},
	// Providers of its own models: a provider's apiKeyCommand runs before each request, and its base URL receives
	// the key.
	{Path: "providers.json"},
	// The tools and commands the user allowed for good: a session that wrote an allow-all here would have its
	// agent run commands unasked.
	{Path: "permissions-config.json"},
	{Path: "hooks", Tree: true},
	{Path: "agents", Tree: true},
	{Path: "skills", Tree: true},
	{Path: "installed-plugins", Tree: true},
	{Path: "extensions", Tree: true},
	{Path: ".github/hooks", Project: true, Tree: true},
	{Path: ".github/copilot/settings.json", Project: true, Part: settings},
	{Path: ".github/copilot/settings.local.json", Project: true, Part: settings},
	{Path: ".mcp.json", Project: true},
	{Path: ".github/mcp.json", Project: true},
	{Path: ".github/extensions", Project: true, Tree: true},
	{Path: ".github/lsp.json", Project: true},
	{Path: ".github/skills", Project: true, Tree: true},
	{Path: ".github/agents", Project: true, Tree: true},
}

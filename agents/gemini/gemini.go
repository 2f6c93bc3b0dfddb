// Package gemini is what sessionfs knows of Gemini CLI: its folder, its variable, the project names it gives a
// cwd, what it needs seeded to start unattended, and how its chats read.
package gemini

import (
	"path/filepath"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// Agent is Gemini CLI. It names a project folder after the cwd's base name (projects.json maps each cwd to its
// slug; versions before it used sha256 of the path) and writes the cwd into <slug>/.project_root to claim the
// name. GEMINI_CLI_HOME names the folder holding .gemini.
var Agent = &agents.Agent{
	Name: "gemini", Dir: dir, Var: "GEMINI_CLI_HOME", VarIsParent: true, Views: views,
	Credentials: []string{"oauth_creds.json", "mcp-oauth-tokens.json"},
	ResumeArg:   "--resume",
	Files: &agents.Files{
		Dir: "tmp", Depth: 1, Sub: "chats", Name: lazyregexp.New(`^session-.*-([0-9a-fA-F]{8})\.jsonl$`), Partial: true,
		Read: read, Line: line, InProject: inProject,
	},
	Seed: seed,
	Code: Code(dir),
	// gemini -p: a prompt, unattended.
	Records:  []string{"tmp"},
	AsksTurn: PromptAsked,
	// Gemini CLI 0.61's mark on its shells' processes, and on the process it relaunches itself as.
	ChildVars: []string{"GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH"},
}

const dir = ".gemini"

// views are Gemini's project folders: every project name is a view of the workspace's, keeping its own Owner.
var views = []agents.Views{
	{Dir: "tmp", Canonical: Slug(agents.CanonicalCwd), Name: IsProject, Own: Owner},
	{Dir: "history", Canonical: Slug(agents.CanonicalCwd), Name: IsProject, Own: Owner},
}

// Owner is the file in which Gemini CLI records which cwd a project folder belongs to.
const Owner = ".project_root"

// Slug is the folder name Gemini CLI first tries for a cwd: its base name, lower-cased, every run of other
// characters than [a-z0-9] one '-', trimmed of dashes ("project" when nothing is left). A name already held by
// another cwd gets -1, -2, ... appended.
func Slug(cwd string) string {
	base := filepath.Base(cwd)
	if base == "/" || base == "." {
		base = ""
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "project"
	}
	return s
}

// shared are folders Gemini CLI keeps in tmp/ for every project at once; they are never views.
var shared = map[string]bool{"bin": true, "background-processes": true}

// IsProject reports whether name could be a Gemini project folder: 1 to 255 bytes of [a-z0-9-], and not one of
// the folders tmp/ holds for all projects. The sha256 names of versions before projects.json are left out: a
// current Gemini moves such a folder's content to the slug's when it sees one (StorageMigration), and through a
// view both would be the same folder.
func IsProject(name string) bool {
	if len(name) == 0 || len(name) > 255 || shared[name] || agents.IsHash(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// inProject: Gemini's chats hold no cwd, so a project's folder is the one projects.json gives the path, or
// (before it) its hash.
func inProject(src *layout.Dir, folder, project string) bool {
	if folder == agents.PathHash(project) {
		return true
	}
	found := false
	_ = agents.ReadJSON(src, "projects.json", func(m map[string]any) {
		projects, _ := m["projects"].(map[string]any)
		found = projects != nil && projects[project] == folder
	})
	return found
}

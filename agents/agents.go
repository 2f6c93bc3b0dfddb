package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sessionfs/sessionfs/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// Views is one folder of an agent whose entries the agent names after a cwd (checked against each CLI's source and
// a run of it; see the README's "Other agents"). Through the mount every name the agent could make there is a view
// of Canonical, the entry the session's workspace (/session/workspace) gets, so the same files are found from
// any cwd.
type Views struct {
	Dir       string            // inside the agent's folder ("projects", "tmp")
	Canonical string            // the entry of /session/workspace: where everything is kept
	Name      func(string) bool // the names the agent makes from a cwd; each one is a view of Canonical
	// Only: nothing but such names lives in Dir, so other names do not exist (Claude's projects). Otherwise they
	// are the folder's own entries, passed through.
	Only bool
	// Own is a file each name keeps for itself (Gemini's ownership marker, which holds the one cwd the name
	// belongs to): through a view it is the name's own file in the store (Dir/<name>/Own), never Canonical's.
	Own string
}

// Agent is one coding agent: its folder in a session and how it is pointed there.
type Agent struct {
	Name string // as --agent takes it
	Dir  string // the agent's folder in a session, beside .claude
	// Var is the variable that moves the agent's state into Dir: it names Dir itself, or (VarIsParent) the
	// folder holding Dir, as GEMINI_CLI_HOME names the parent of .gemini.
	Var         string
	VarIsParent bool
	// Also are variables that move part of the agent's state (its index, its chats) elsewhere when set: set to
	// the agent's folder too, so a value in the caller's environment does not take that part out of the session.
	Also  []string
	Views []Views // its cwd-keyed folders, if any
}

// CanonicalCwd is the cwd whose names are the canonical ones: the session's workspace as containers see it.
var CanonicalCwd = layout.ContainerPaths.Workspace

// The agents. Claude's rule is the one the mount has always had; the others were read from each CLI's source
// and checked with a run of the pinned version.
var (
	Claude = &Agent{Name: "claude", Dir: layout.ClaudeDir, Var: claude.EnvConfigDir, Views: []Views{{
		Dir: "projects", Canonical: layout.CanonicalProject, Name: claude.IsFolderName, Only: true,
	}}}
	// Codex files sessions by date (sessions/YYYY/MM/DD/rollout-*-<id>.jsonl, indexed in state_*.sqlite):
	// resume by id works from any cwd, so it needs only its own CODEX_HOME.
	// CODEX_SQLITE_HOME moves the index (state_*.sqlite), which lives in CODEX_HOME by default.
	Codex = &Agent{Name: "codex", Dir: ".codex", Var: "CODEX_HOME", Also: []string{"CODEX_SQLITE_HOME"}}
	// Gemini CLI names a project folder after the cwd's base name (projects.json maps each cwd to its slug;
	// versions before it used sha256 of the path) and writes the cwd into <slug>/.project_root to claim the name.
	Gemini = &Agent{Name: "gemini", Dir: ".gemini", Var: "GEMINI_CLI_HOME", VarIsParent: true, Views: []Views{
		{Dir: "tmp", Canonical: GeminiSlug(CanonicalCwd), Name: IsGeminiProject, Own: GeminiOwner},
		{Dir: "history", Canonical: GeminiSlug(CanonicalCwd), Name: IsGeminiProject, Own: GeminiOwner},
	}}
	// Qwen Code keeps conversations in projects/<sanitized cwd>/chats and scratch files in tmp/<sha256 of cwd>.
	// QWEN_RUNTIME_DIR, when set, takes projects/ and tmp/ (the chats) out of QWEN_HOME.
	Qwen = &Agent{Name: "qwen", Dir: ".qwen", Var: "QWEN_HOME", Also: []string{"QWEN_RUNTIME_DIR"}, Views: []Views{
		{Dir: "projects", Canonical: QwenFolder(CanonicalCwd), Name: claude.IsFolderName},
		{Dir: "tmp", Canonical: PathHash(CanonicalCwd), Name: isHash},
	}}
)

// All lists the agents, Claude first.
var All = []*Agent{Claude, Codex, Gemini, Qwen}

// Names is the list --agent takes.
func Names() []string {
	out := make([]string, len(All))
	for i, a := range All {
		out[i] = a.Name
	}
	return out
}

// ByName returns the agent called name ("" is Claude).
func ByName(name string) (*Agent, error) {
	if name == "" {
		return Claude, nil
	}
	for _, a := range All {
		if a.Name == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown agent %q (want %s)", name, strings.Join(Names(), ", "))
}

// ByDir returns the agent whose folder in a session is dir (".qwen"), or nil.
func ByDir(dir string) *Agent {
	for _, a := range All {
		if a.Dir == dir {
			return a
		}
	}
	return nil
}

// Env is what points the agent at its folder in a session whose root a process sees as root ("/session" in a
// container): K=V pairs. Claude's (CLAUDE_CONFIG_DIR and its project folder name) every run gets anyway.
func (a *Agent) Env(root string) []string {
	dir := filepath.Join(root, a.Dir)
	env := []string{a.Var + "=" + dir}
	if a.VarIsParent {
		env[0] = a.Var + "=" + root
	}
	for _, v := range a.Also {
		env = append(env, v+"="+dir)
	}
	return env
}

// Resume is the command line that resumes the agent's conversation id in the cwd (interactive, unless the
// arguments that follow ask otherwise): "codex resume ID", "gemini --resume ID", "qwen --resume ID".
func (a *Agent) Resume(id string) []string {
	if a == Codex {
		return []string{a.Name, "resume", id}
	}
	return []string{a.Name, "--resume", id}
}

// Path is the agent's folder below a session root.
func (a *Agent) Path(root string) string { return filepath.Join(root, a.Dir) }

// QwenFolder is the folder name Qwen Code gives a cwd under projects/: every UTF-16 code unit that is not
// [A-Za-z0-9] becomes '-' (an astral character is two units, so two dashes). Unlike Claude it never truncates,
// so a long path makes a name the filesystem refuses, for Qwen itself too.
func QwenFolder(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r > 0xffff:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// PathHash is the sha256 of a path in hex: Qwen's tmp/ folder name for a cwd (and Gemini's before projects.json).
func PathHash(p string) string {
	h := sha256.Sum256([]byte(p))
	return hex.EncodeToString(h[:])
}

func isHash(name string) bool {
	if len(name) != 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// GeminiOwner is the file in which Gemini CLI records which cwd a project folder belongs to.
const GeminiOwner = ".project_root"

// GeminiSlug is the folder name Gemini CLI first tries for a cwd: its base name, lower-cased, every run of other
// characters than [a-z0-9] one '-', trimmed of dashes ("project" when nothing is left). A name already held by
// another cwd gets -1, -2, ... appended.
func GeminiSlug(cwd string) string {
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

// geminiShared are folders Gemini CLI keeps in tmp/ for every project at once; they are never views.
var geminiShared = map[string]bool{"bin": true, "background-processes": true}

// IsGeminiProject reports whether name could be a Gemini project folder: 1 to 255 bytes of [a-z0-9-], and not one
// of the folders tmp/ holds for all projects. The sha256 names of versions before projects.json are left out: a
// current Gemini moves such a folder's content to the slug's when it sees one (StorageMigration), and through a
// view both would be the same folder.
func IsGeminiProject(name string) bool {
	if len(name) == 0 || len(name) > 255 || geminiShared[name] || isHash(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

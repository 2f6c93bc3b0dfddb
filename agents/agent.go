package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// Agent is one coding agent as sessionfs knows it. Each agents/<name> package declares one; agents/all lists them.
type Agent struct {
	Name string // as --agent takes it
	Dir  string // the agent's folder in a session, beside .claude
	// Var is the variable that moves the agent's state into Dir: it names Dir itself, or (VarIsParent) the
	// folder holding Dir, as GEMINI_CLI_HOME names the parent of .gemini.
	Var         string
	VarIsParent bool
	// Also are variables that move part of the agent's state (its index, its chats) elsewhere when set: set to
	// the agent's folder too, so a value in the caller's environment does not take that part out of the session.
	Also []string
	// In names, for Var or a variable of Also, the path below Dir it is set to instead of Dir itself: opencode's
	// XDG_DATA_HOME is .opencode/data, its XDG_CONFIG_HOME .opencode/config.
	In map[string]string
	// Clear are variables that would move part of the agent's state out of the session and that the agent ignores
	// when empty: set empty, so a value in the caller's environment does not take that part out of the session
	// (pi's PI_CODING_AGENT_SESSION_DIR, which would file every cwd's sessions flat in one folder).
	Clear []string
	// HomeDir is where the agent keeps its state below the user's home when Var is not set ("" is Dir): pi's
	// ~/.pi/agent, which PI_CODING_AGENT_DIR replaces as a whole and a session keeps as .pi.
	HomeDir string
	// Always: the agent's folder is made with every session and seeded by its own package (Claude's); the
	// others' are made on demand (Prepare).
	Always bool
	Views  []Views // its cwd-keyed folders, if any
	// Credentials are the files in Dir that hold the agent's login ("credentials/*": every file of that folder): an
	// export leaves them out unless asked to.
	Credentials []string
	// Secrets are files in Dir that hold credentials among other state (opencode's database): an export packs
	// what their Scrub returns instead, unless asked for credentials.
	Secrets []Secret
	// ResumeArg comes between the CLI and a conversation id to resume it: "--resume", or Codex's "resume".
	ResumeArg string
	// Chats reads the agent's conversations in a session: its own (List, Count) or, for an agent that keeps each
	// conversation in one file, Files.
	Chats Chats
	// Files says where the agent keeps each conversation, one file each, and how the files read (nil for Claude,
	// whose transcripts have sidecars and owners of their own: agents/claude).
	Files *Files
	// Seed writes what the agent needs to start unattended in a session beyond its folder (Gemini's trust and
	// project registry); nil for none.
	Seed func(sess *layout.Dir, workspaces []string) error
	// Launch readies the agent's state in the session open as sess for a run that sees the session at root and
	// whose cwd (as the agent sees it) is cwd, each time sessionfs starts it (env, exec, run, resume): opencode's and
	// Kimi's conversations follow the cwd, Codex's index must name rollouts beneath root. nil for none.
	Launch func(sess *layout.Dir, root, cwd string) error
	// Appends: the agent only ever appends whole lines to a conversation file (every later copy of one begins with
	// every earlier one), so two copies of one that two places added to are joined line by line (package merge).
	Appends bool
	// Records are the folders in Dir the agent records its conversations in (its transcripts, chat files, its
	// database), and AsksTurn says whether its CLI's arguments (argv[1:]) ask it, unattended, for a turn it records
	// there (claude -p, codex exec, opencode run): a run of that which exits 0 with nothing recorded is an error
	// (Trace; backends.Runner.Run). nil AsksTurn: never judged.
	Records  []string
	AsksTurn func(args []string) bool
	// ChildVars are what the agent's runtime sets in the processes it starts (its tools' shells, hooks, MCP
	// servers) to mark them as its children: an agent sessionfs starts never inherits them (SessionEnv), so one
	// started from an agent's shell runs as a session of its own, not as a nested one of another session.
	ChildVars []string
	// Code are the files in a session the agent carries out when it starts (hooks, helpers, MCP servers, env,
	// plugins): on this host it starts only once the user approved them (package trust).
	Code []CodeFile
	// IDPrefix starts every conversation id of the agent's ("ses_" for opencode): watch's short ids leave it out,
	// and a start of an id typed without it is taken (find, resume).
	IDPrefix string
	// Tail is how watch follows an agent whose conversations are rows of a database (opencode's) rather than
	// files it appends to; nil for the others.
	Tail *Tail
	// Imported readies, in the session open as sess, a conversation an import just copied there (its files, rels
	// beneath the agent's folder both in src, the agent's folder it came from, and in the session): what the agent
	// needs beside them to find it (Kimi's state.json and the workspace it registers). nil for none.
	Imported func(src, sess *layout.Dir, rels []string) error
	// Import adopts the agent's existing history into a store, for an agent without Files (opencode's database);
	// nil when Import (the files' import) does it. An empty opts.From is the agent's own default.
	Import func(store *layout.Store, opts ImportOptions) (ImportReport, error)
}

// Chats is what an agent with rules of its own for its conversations (Claude) reads them by.
type Chats interface {
	// List reads the agent's conversations in the session open as sess, each once.
	List(sess *layout.Dir) ([]Conversation, error)
	// Count counts them without reading them: ls counts thousands of sessions.
	Count(sess *layout.Dir) int
}

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

// CanonicalCwd is the cwd whose names are the canonical ones: the session's workspace as containers see it.
var CanonicalCwd = layout.ContainerPaths.Workspace

// Env is what points the agent at its folder in a session whose root a process sees as root ("/session" in a
// container): K=V pairs. Claude's (CLAUDE_CONFIG_DIR and its project folder name) every run gets anyway.
func (a *Agent) Env(root string) []string {
	dir := filepath.Join(root, a.Dir)
	env := []string{a.Var + "=" + filepath.Join(dir, a.In[a.Var])}
	if a.VarIsParent {
		env[0] = a.Var + "=" + root
	}
	for _, v := range a.Also {
		env = append(env, v+"="+filepath.Join(dir, a.In[v]))
	}
	for _, v := range a.Clear {
		env = append(env, v+"=")
	}
	return env
}

// Resume is the command line that resumes the agent's conversation id in the cwd (interactive, unless the
// arguments that follow ask otherwise): "codex resume ID", "gemini --resume ID", "qwen --resume ID",
// "pi --session ID".
func (a *Agent) Resume(id string) []string { return []string{a.Name, a.ResumeArg, id} }

// Path is the agent's folder below a session root.
func (a *Agent) Path(root string) string { return filepath.Join(root, a.Dir) }

// Home is where the agent keeps its state for this user: its variable's folder when set, else ~/<HomeDir>
// (~/<Dir> when it has none).
func (a *Agent) Home() (string, error) {
	if v := os.Getenv(a.Var); v != "" {
		if a.VarIsParent {
			return filepath.Join(v, a.Dir), nil
		}
		return v, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	if a.HomeDir != "" {
		return filepath.Join(home, a.HomeDir), nil
	}
	return filepath.Join(home, a.Dir), nil
}

// PathHash is the sha256 of a path in hex: Qwen's tmp/ folder name for a cwd (and Gemini's before projects.json).
func PathHash(p string) string {
	h := sha256.Sum256([]byte(p))
	return hex.EncodeToString(h[:])
}

// IsHash reports whether name could be a PathHash.
func IsHash(name string) bool {
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

// Secret is a file of an agent's that holds credentials among what a session needs.
type Secret struct {
	Name string // below the agent's folder
	// Sidecars are files beside it that an export leaves out with it: what they held is in Scrub's copy.
	Sidecars []string
	// Scrub returns the file's content without its credentials, and names what it took out.
	Scrub func(sess *layout.Dir) (data []byte, dropped []string, err error)
}

package layout

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// The convention's folder names inside a session, and where a session is seen inside containers and sandboxes.
const (
	AppDir       = "app"
	WorkspaceDir = "workspace"
	MCPDir       = "mcps"
	ClaudeDir    = ".claude"
	ProjectsDir  = ".claude/projects"
	MetaFile     = "session.json"

	// ContainerRoot is where a session's folder is mounted in containers and sandboxes.
	ContainerRoot = "/session"
	// CanonicalProject is the one transcript folder of a session: the sanitized form of ContainerRoot/workspace, so
	// a container that sees the plain store (no FUSE) finds its transcripts natively.
	CanonicalProject = "-session-workspace"
)

// Paths are the folders of one session, derived from its root by convention.
type Paths struct {
	Root      string `json:"root"`
	App       string `json:"app"`
	Workspace string `json:"workspace"`
	MCPs      string `json:"mcps"`
	Claude    string `json:"claude"` // CLAUDE_CONFIG_DIR
	Projects  string `json:"projects"`
	Canonical string `json:"canonical"` // Projects/CanonicalProject: where every transcript lives
	Meta      string `json:"meta"`
}

// Derive returns the conventional paths below a session folder (on the host, or ContainerRoot in a container).
func Derive(root string) Paths {
	return Paths{
		Root:      root,
		App:       filepath.Join(root, AppDir),
		Workspace: filepath.Join(root, WorkspaceDir),
		MCPs:      filepath.Join(root, MCPDir),
		Claude:    filepath.Join(root, ClaudeDir),
		Projects:  filepath.Join(root, ProjectsDir),
		Canonical: filepath.Join(root, ProjectsDir, CanonicalProject),
		Meta:      filepath.Join(root, MetaFile),
	}
}

// ContainerPaths are the session's paths as containers and sandboxes see them.
var ContainerPaths = Derive(ContainerRoot)

// ToContainer maps a host path inside the session folder sessionRoot to its path in a container. A path that is not
// inside the session, after cleaning (so ".." cannot escape), is an error, never a guess.
func ToContainer(sessionRoot, hostPath string) (string, error) {
	rel, err := within(filepath.Clean(sessionRoot), filepath.Clean(hostPath))
	if err != nil {
		return "", err
	}
	return path.Join(ContainerRoot, filepath.ToSlash(rel)), nil
}

// ToHost maps a container path under ContainerRoot back to the host path inside sessionRoot.
func ToHost(sessionRoot, containerPath string) (string, error) {
	if !path.IsAbs(containerPath) {
		return "", &Error{Op: "map", Path: printable(containerPath), Kind: ErrOutside, Err: fmt.Errorf("not an absolute container path")}
	}
	rel, err := within(ContainerRoot, path.Clean(containerPath))
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Clean(sessionRoot), filepath.FromSlash(rel)), nil
}

// within returns p relative to root, or ErrOutside. Both must be clean.
func within(root, p string) (string, error) {
	if p == root {
		return ".", nil
	}
	prefix := root
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if !strings.HasPrefix(p, prefix) {
		return "", &Error{Op: "map", Path: printable(p), Kind: ErrOutside, Err: fmt.Errorf("not under %s", root)}
	}
	return p[len(prefix):], nil
}

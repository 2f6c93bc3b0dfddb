package bind

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The trust boundary leaked where a feature re-implemented a bind by hand (a fourth copy handed a path to
// mount(2)). This test holds the tree to one primitive: the mount system calls appear in package bind only, but
// for the few calls listed here, each on a path that neither a session nor a FUSE daemon answers; and the callers
// of the primitive are the ones listed, so a fifth is seen in review.

// mountCalls are the system calls that mount, unmount or clone mounts.
var mountCalls = []string{"Mount", "Unmount", "OpenTree", "MoveMount", "MountSetattr", "Fsmount", "Fsopen", "Fsconfig", "PivotRoot"}

// allowedMountCalls are the calls outside package bind, by file, with why each is not a bind of a session's folder.
var allowedMountCalls = map[string][]string{
	// The FUSE mount itself at the user's mountpoint, and its unmount there (the admin's path, not the mount's).
	// The holder of a mount (a confined mount's helper, a normal user's holder) unmounts it there too (unmountAs).
	"mount/start.go":      {"Mount", "Unmount"},
	"mount/unmount.go":    {"Unmount", "Unmount"},
	"mount/fusermount.go": {"Unmount"},
	// fusectl at /sys/fs/fuse/connections, to abort a hung connection.
	"mount/inspect/inspect.go": {"Mount"},
	// The fault-injection build's tmpfs over a test's own path (build tag fault, never in a release).
	"mount/nodes/fault_on.go": {"Mount"},
	// Staged binds under a root-only folder of sessionfs's own (the engine needs a path).
	"backends/docker/binds.go": {"Unmount", "Unmount"},
}

// primitiveCallers are the files that bind a session's folder, each through Attach, Clone or LaySession (a
// session laid whole for something that follows paths as root: the kubelet, the engine).
var primitiveCallers = []string{"backends/docker/binds.go", "backends/local/nsexec.go", "csi/publish.go", "dockervolume/stage.go", "mount/binds.go", "mount/viewbinds.go"}

func TestOneBindPrimitive(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	calls := map[string][]string{}
	var callers []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || rel == "e2e" || rel == "cmd/sessionfs-bench" || rel == "bind" || rel == "third_party" {
				// e2e tests and the bench set up their own mounts; bind is the primitive; third_party holds
				// go-fuse (a module of its own: it mounts FUSE, never binds a session's folder)
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		usesPrimitive := false
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch {
			case (pkg.Name == "unix" || pkg.Name == "syscall") && slices.Contains(mountCalls, sel.Sel.Name):
				calls[rel] = append(calls[rel], sel.Sel.Name)
			case pkg.Name == "bind" && (sel.Sel.Name == "Attach" || sel.Sel.Name == "Clone" || sel.Sel.Name == "LaySession"):
				usesPrimitive = true
			}
			return true
		})
		if usesPrimitive {
			callers = append(callers, rel)
		}
		return nil
	})
	require.NoError(t, err)
	for file, got := range calls {
		slices.Sort(got)
		want := slices.Clone(allowedMountCalls[file])
		slices.Sort(want)
		assert.Equal(t, want, got, "%s: mount system calls belong in package bind (a bind of a session's folder made by hand is where the boundary leaks)", file)
	}
	for file := range allowedMountCalls {
		assert.Contains(t, calls, file, "%s is allowed mount calls it no longer makes: take it off the list", file)
	}
	slices.Sort(callers)
	assert.Equal(t, primitiveCallers, callers, "the callers of the bind primitive (a new one needs the attack tests run against it)")
}

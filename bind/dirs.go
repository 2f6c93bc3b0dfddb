package bind

import "github.com/sessionfs/sessionfs/layout"

// MountDirs are the heavy folders of a session that the mount binds from the store over its own folders, so a
// shell, a `grep -r` or a person's `docker run -v <mnt>/sessions/<id>:/session` works at the disk's speed. The
// workspace is bound always; app and mcps once they hold something (Lazy).
var MountDirs = []string{layout.WorkspaceDir, layout.AppDir, layout.MCPDir}

// RunDirs are the folders a run on the mount (the local namespace, a container, a CSI pod) binds from the store:
// MountDirs and the canonical transcript folder, whose appends are the agent's own and need no view. Everything
// else (/session, .claude, every other cwd's transcript folder) stays the mount's.
var RunDirs = append(append([]string(nil), MountDirs...), layout.ProjectsDir+"/"+layout.CanonicalProject)

// Lazy reports whether the mount binds dir only once it holds something: most sessions' app and mcps are empty,
// nothing in an empty folder is faster for a bind, and every mount costs every container start on the machine.
func Lazy(dir string) bool { return dir == layout.AppDir || dir == layout.MCPDir }

// IsMountDir reports whether dir is one of MountDirs.
func IsMountDir(dir string) bool {
	for _, d := range MountDirs {
		if d == dir {
			return true
		}
	}
	return false
}

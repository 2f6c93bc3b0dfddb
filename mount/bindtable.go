package mount

import (
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// The binds over a mount (sessions' folders and transcript views) as the mount table shows them, whoever made them:
// this daemon, its helper, or a killed daemon (doctor counts them; Unmount detaches them first).

// Binds lists the binds of sessions' folders and transcript views over the mount at mnt, as the mount table shows
// them (the daemon's, or those a killed daemon left).
func Binds(mnt string) []string {
	var out []string
	for _, m := range listBinds(mnt) {
		out = append(out, m.Mountpoint)
	}
	return out
}

// listBinds is Binds with the mount table's entries.
func listBinds(mnt string) []*mountinfo.Info {
	prefix := strings.TrimSuffix(mnt, "/") + "/sessions/"
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(strings.TrimSuffix(mnt, "/")))
	if err != nil {
		return nil
	}
	var out []*mountinfo.Info
	for _, m := range mounts {
		rel, ok := strings.CutPrefix(m.Mountpoint, prefix)
		if !ok {
			continue
		}
		id, dir, _ := strings.Cut(rel, "/")
		if layout.ValidateID(id) == nil && (bind.IsMountDir(dir) || isViewBind(dir)) {
			out = append(out, m)
		}
	}
	return out
}

// isViewBind reports whether rel, beneath a session's folder, is where a transcript view is bound
// (viewbinds.go): .claude/projects/<name>.
func isViewBind(rel string) bool {
	name, ok := strings.CutPrefix(rel, layout.ProjectsDir+"/")
	return ok && claude.IsFolderName(name)
}

// DetachBinds detaches (lazily: a process inside keeps its folder) the binds over the mount at mnt: each through
// the mount's own folder opened beneath its root (bind.DetachAt), never by a path the mount's daemon answers.
func DetachBinds(mnt string) {
	binds := listBinds(mnt)
	if len(binds) == 0 {
		return
	}
	root, err := unix.Open(mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(root)
	prefix := strings.TrimSuffix(mnt, "/") + "/"
	for _, m := range binds {
		_ = bind.DetachAt(root, strings.TrimPrefix(m.Mountpoint, prefix), uint64(m.ID))
	}
}

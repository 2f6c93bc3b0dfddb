package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// Users lists the processes that keep the mount at mnt busy (a working folder, a root or an open file beneath
// it), as "pid name", for the message that says what an unmount waits for. It reads /proc: no path beneath the
// mount is walked.
func Users(mnt string) []string {
	return procsUsing(func(p string) bool { return beneath(p, mnt) }, nil, nil)
}

// SessionUsers lists the processes that use session id of the store at storeRoot through its mounts, as "pid
// name" (with the container a process runs in, if any): a working folder, root or open file beneath
// <mountpoint>/sessions/<id> of one of the store's mounts here, or, in another mount namespace (a container given
// -v <mountpoint>/sessions/<id>:/session by hand), a mount of the store whose root is the session's folder or
// beneath it. Removing the session empties what they see. The mounts' own privileged helpers, which hold the
// sessions they bind, are none of them. It reads /proc only.
func SessionUsers(storeRoot, id string) []string {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot, false
	})
	if err != nil {
		return nil
	}
	var dirs, helpers []string
	for _, m := range mounts {
		dirs = append(dirs, filepath.Join(m.Mountpoint, "sessions", id))
		for _, role := range append(selfexec.Before(selfexec.Helper), selfexec.Helper) {
			helpers = append(helpers, role+"\x00"+m.Mountpoint+"\x00")
		}
	}
	helper := func(pid string) bool {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		_, args, _ := strings.Cut(string(b), "\x00")
		return err == nil && slices.Contains(helpers, args)
	}
	uses := func(p string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return beneath(p, d) })
	}
	self, _ := os.Readlink("/proc/self/ns/mnt")
	seen := map[string]bool{} // by mount namespace: whether it holds the session's folder
	inNamespace := func(pid string) bool {
		ns, err := os.Readlink(filepath.Join("/proc", pid, "ns", "mnt"))
		if err != nil || ns == self {
			return false // ours: a mount of the session here is no process's use of it
		}
		if held, ok := seen[ns]; ok {
			return held
		}
		seen[ns] = holdsSession(pid, storeRoot, "/sessions/"+id)
		return seen[ns]
	}
	return procsUsing(uses, inNamespace, helper)
}

// holdsSession tells whether process pid's mount table has a mount of the store's filesystem whose root is the
// session folder root (as the filesystem names it) or beneath it.
func holdsSession(pid, storeRoot, root string) bool {
	f, err := os.Open(filepath.Join("/proc", pid, "mountinfo"))
	if err != nil {
		return false
	}
	defer f.Close()
	mounts, _ := mountinfo.GetMountsFromReader(f, func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot || !beneath(m.Root, root), false
	})
	return len(mounts) > 0
}

func beneath(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// procsUsing lists, as "pid name", the processes (but this one, and those skip, when given, says to) with a
// working folder, root or open file whose path uses accepts, or for which other (when given) says yes.
func procsUsing(uses func(string) bool, other, skip func(pid string) bool) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		if !pathsUse(pid, uses) && (other == nil || !other(pid)) || skip != nil && skip(pid) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		user := fmt.Sprintf("%s %s", pid, strings.TrimSpace(string(comm)))
		if c := container(pid); c != "" {
			user += " (container " + c + ")"
		}
		out = append(out, user)
	}
	slices.Sort(out)
	return out
}

// pathsUse tells whether process pid's working folder, root or an open file is a path uses accepts.
func pathsUse(pid string, uses func(string) bool) bool {
	for _, l := range []string{"cwd", "root"} {
		if p, err := os.Readlink(filepath.Join("/proc", pid, l)); err == nil && uses(p) {
			return true
		}
	}
	fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name())); err == nil && uses(p) {
			return true
		}
	}
	return false
}

// containerID is a container's id in a cgroup path, as Docker, Podman and containerd name their cgroups
// (…/docker-<id>.scope, /docker/<id>, libpod-<id>).
var containerID = lazyregexp.New(`(?:docker|libpod|cri-containerd|crio)[-/]([0-9a-f]{64})`)

// container is the short id of the container process pid runs in, "" for none known.
func container(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return ""
	}
	if m := containerID.FindSubmatch(b); m != nil {
		return string(m[1][:12])
	}
	return ""
}

package mount

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// A store on a filesystem that other hosts also mount (JuiceFS, CephFS, NFS, ...) changes where this host's
// watcher cannot see: inotify reports only this host's changes. The kernel must then not serve names and
// attributes for long: SharedTimeout bounds how stale another host's change can look through this mount (plus
// whatever the shared filesystem's own client caches, typically 1 s more).

// SharedTimeout is the kernel cache timeout of a mount whose store is shared with other hosts.
const SharedTimeout = time.Second

// networkMagic are the statfs magics of filesystems shared between hosts.
var networkMagic = map[int64]string{
	0x6969:     "nfs",
	0x00c36400: "ceph",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x01161970: "gfs2",
	0x7461636f: "ocfs2",
	0x0bd00bd0: "lustre",
	0x47504653: "gpfs",
	0x5346414f: "afs",
}

// sharedFUSE are the FUSE filesystems (by mountinfo type or subtype) shared between hosts.
var sharedFUSE = []string{"juicefs", "ceph", "ceph-fuse", "glusterfs", "mfs", "moosefs", "lizardfs", "seaweedfs",
	"weed", "gcsfuse", "s3fs", "rclone", "sshfs", "beegfs", "xtreemfs", "orangefs", "cvmfs"}

// SharedStore reports whether the folder root lives on a filesystem other hosts may mount too, and which one.
func SharedStore(root string) (fstype string, shared bool) {
	var st unix.Statfs_t
	if unix.Statfs(root, &st) != nil {
		return "", false
	}
	if name, ok := networkMagic[int64(st.Type)]; ok {
		return name, true
	}
	if st.Type != unix.FUSE_SUPER_MAGIC {
		return "", false
	}
	m := mountOf(root)
	if m == nil {
		return "", false
	}
	return sharedFUSEMount(m.FSType, m.Source)
}

// sharedFUSEMount tells a shared FUSE filesystem by its mountinfo type ("fuse.juicefs") or, for clients that
// set no subtype, by its source ("mfs#host:port", "JuiceFS:vol"), and names it.
func sharedFUSEMount(fstype, source string) (name string, shared bool) {
	sub, _ := strings.CutPrefix(fstype, "fuse.")
	sub, _ = strings.CutPrefix(sub, "fuseblk.")
	if slices.Contains(sharedFUSE, strings.ToLower(sub)) {
		return fstype, true
	}
	src := strings.ToLower(source)
	for _, name := range sharedFUSE {
		if strings.HasPrefix(src, name+"#") || strings.HasPrefix(src, name+":") {
			return fstype + " (" + name + ")", true
		}
	}
	return fstype, false
}

// mountOf is the mount that holds path: the one with the longest mountpoint containing it.
func mountOf(path string) *mountinfo.Info {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil
	}
	var best *mountinfo.Info
	for _, m := range mounts {
		if real != m.Mountpoint && !strings.HasPrefix(real, strings.TrimSuffix(m.Mountpoint, "/")+"/") {
			continue
		}
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) { // the later of equals is on top
			best = m
		}
	}
	return best
}

package fs

import (
	"github.com/moby/sys/mountinfo"
)

// FSType is the filesystem type sessionfs mounts show in /proc/self/mountinfo ("fuse." + Name).
const FSType = "fuse.sessionfs"

// FindMount returns the mountpoint of a live sessionfs mount of storeRoot, if there is one. The mount's source
// is the store's absolute path, so the mount table says which store each mount serves.
func FindMount(storeRoot string) (string, bool) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot, false
	})
	if err != nil {
		return "", false
	}
	for _, m := range mounts {
		if !Stale(m.Mountpoint) {
			return m.Mountpoint, true
		}
	}
	return "", false
}

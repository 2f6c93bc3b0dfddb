package mount

import (
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// FSType is the filesystem type sessionfs mounts show in /proc/self/mountinfo ("fuse." + Name).
const FSType = inspect.FSType

// Found describes a live sessionfs mount.
type Found struct {
	Mountpoint string
	// AllowOther: users other than the mounting one may use it (containers running as another uid).
	AllowOther bool
	// Owner is the uid that mounted it (FUSE's user_id): the one uid let in without AllowOther.
	Owner uint32
}

// Find returns a live sessionfs mount of storeRoot, if there is one. The mount's source is the store's
// absolute path, so the mount table says which store each mount serves.
func Find(storeRoot string) (Found, bool) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot, false
	})
	if err != nil {
		return Found{}, false
	}
	for _, m := range mounts {
		if !Stale(m.Mountpoint) {
			return Found{Mountpoint: m.Mountpoint, AllowOther: hasOption(m.VFSOptions, "allow_other"), Owner: inspect.MountOwner(m.VFSOptions)}, true
		}
	}
	return Found{}, false
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// FindStale returns the mountpoint of a stale sessionfs mount of storeRoot (its daemon gone or hung), if any:
// what a user is told instead of "not mounted".
func FindStale(storeRoot string) (string, bool) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot, false
	})
	if err != nil {
		return "", false
	}
	for _, m := range mounts {
		if Stale(m.Mountpoint) {
			return m.Mountpoint, true
		}
	}
	return "", false
}

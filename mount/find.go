package mount

import (
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// FSType is the filesystem type sessionfs mounts show in /proc/self/mountinfo ("fuse." + Name).
const FSType = "fuse.sessionfs"

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
			return Found{Mountpoint: m.Mountpoint, AllowOther: hasOption(m.VFSOptions, "allow_other"), Owner: mountOwner(m.VFSOptions)}, true
		}
	}
	return Found{}, false
}

// mountOwner is the user_id a FUSE mount's options name (0 when none does: only root mounts without one).
func mountOwner(opts string) uint32 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "user_id="); ok {
			if uid, err := strconv.ParseUint(v, 10, 32); err == nil {
				return uint32(uid)
			}
		}
	}
	return 0
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

package csi

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// Targets and mounts as the kernel shows them: a target beneath the kubelet's folder, what is mounted at it, the
// node's sessionfs mount, and whether a mount is one this plugin published (a clone of the node's mount).

// DefaultKubeletRoot is the kubelet's folder: every target a kubelet gives is beneath it.
const DefaultKubeletRoot = "/var/lib/kubelet"

// fuseType is the node mount's filesystem type in the mount table; a published session is a clone of it.
const fuseType = "fuse.sessionfs"

// checkTarget checks a request's volume id and target path (beneath the kubelet's folder), and returns the path
// cleaned.
func (d *Driver) checkTarget(volumeID, target string) (string, error) {
	switch {
	case volumeID == "":
		return "", status.Error(codes.InvalidArgument, "no volume id")
	case target == "" || !filepath.IsAbs(target):
		return "", status.Errorf(codes.InvalidArgument, "target path %q: want an absolute path", target)
	}
	target = filepath.Clean(target)
	if _, err := d.beneathKubelet(target); err != nil {
		return "", err
	}
	return target, nil
}

// kubeletRoot is the folder targets must be beneath.
func (d *Driver) kubeletRoot() string {
	if d.KubeletRoot == "" {
		return DefaultKubeletRoot
	}
	return filepath.Clean(d.KubeletRoot)
}

// beneathKubelet returns target's path relative to the kubelet's folder, refusing a target not strictly beneath it.
func (d *Driver) beneathKubelet(target string) (string, error) {
	rel, err := filepath.Rel(d.kubeletRoot(), target)
	if err != nil || !filepath.IsAbs(target) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", status.Errorf(codes.InvalidArgument, "target %s is not beneath the kubelet's folder %s (--kubelet-root)", target, d.kubeletRoot())
	}
	return rel, nil
}

// openParent opens the folder holding target, walked beneath the kubelet's folder with no symlink, and returns it
// with target's last name.
func (d *Driver) openParent(target string) (int, string, error) {
	rel, err := d.beneathKubelet(target)
	if err != nil {
		return -1, "", err
	}
	root, err := unix.Open(d.kubeletRoot(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("the kubelet's folder %s: %w", d.kubeletRoot(), err)
	}
	defer unix.Close(root)
	fd, err := layout.OpenBeneath(root, filepath.Dir(rel), unix.O_PATH|unix.O_DIRECTORY, 0) // mounts may be crossed: the kubelet's pods folder may be one
	if err != nil {
		return -1, "", err
	}
	return fd, filepath.Base(rel), nil
}

// mountAt is the mount on target (nil when nothing is mounted there).
func (d *Driver) mountAt(target string) (*mountinfo.Info, error) {
	parent, name, err := d.openParent(target)
	if err != nil {
		return nil, err
	}
	defer unix.Close(parent)
	return mountOn(parent, name)
}

// mountOn is the mount on the single name beneath parent: the topmost, or nil when name is not a mountpoint.
func mountOn(parent int, name string) (*mountinfo.Info, error) {
	fd, err := layout.OpenBeneath(parent, name, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	below, err := bind.MountID(parent)
	if err != nil {
		return nil, err
	}
	id, err := bind.MountID(fd)
	if err != nil || id == below {
		return nil, err
	}
	return mountByID(id)
}

// mountByID is the mount table's entry of mount id.
func mountByID(id uint64) (*mountinfo.Info, error) {
	ms, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return uint64(m.ID) != id, uint64(m.ID) == id })
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("mount %d is not in the mount table", id)
	}
	return ms[0], nil
}

// nodeMount is the mount table's entry of the node's sessionfs mount.
func (d *Driver) nodeMount() (*mountinfo.Info, error) {
	fd, err := unix.Open(d.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the sessionfs mount at %s: %w", d.Mountpoint, err)
	}
	defer unix.Close(fd)
	id, err := bind.MountID(fd)
	if err != nil {
		return nil, err
	}
	m, err := mountByID(id)
	if err == nil && (m.FSType != fuseType || m.Root != "/") {
		err = fmt.Errorf("%s is not a sessionfs mount (it is %s)", d.Mountpoint, m.FSType)
	}
	return m, err
}

// owns reports whether the mount m at a target is this plugin's: the one rec (if any) recorded, or a clone of
// the node's mount showing a session.
func (d *Driver) owns(rec *record, m *mountinfo.Info) bool {
	if rec != nil && m.Major == rec.Major && m.Minor == rec.Minor && m.Root == rec.Root {
		return true
	}
	node, err := d.nodeMount()
	return err == nil && m.FSType == fuseType && m.Major == node.Major && m.Minor == node.Minor && strings.HasPrefix(m.Root, "/sessions/")
}

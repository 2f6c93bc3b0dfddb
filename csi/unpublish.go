package csi

import (
	"errors"
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

// DefaultKubeletRoot is the kubelet's folder: every target a kubelet gives is beneath it.
const DefaultKubeletRoot = "/var/lib/kubelet"

// fuseType is the node mount's filesystem type in the mount table; a published session is a clone of it.
const fuseType = "fuse.sessionfs"

// Unpublishing detaches only what this plugin published: a target beneath the kubelet's folder that its record
// names, or whose mount is a clone of the node's mount (the mount table's device and filesystem type are the
// node mount's, its root a session's folder). A mount someone else made there is left alone, and said so.

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

// unpublishTarget detaches this plugin's mount at target (the session's and, with it, the binds beneath it),
// removes the target folder, and forgets the publication. A target with nothing there is done already; one
// holding a mount someone else made is left alone and refused.
func (d *Driver) unpublishTarget(target string) error {
	p := d.published[target]
	var rec *record
	if p != nil {
		rec = &p.rec
	}
	parent, name, err := d.openParent(target)
	if errors.Is(err, unix.ENOENT) {
		return d.forget(target)
	}
	if err != nil {
		return unpublishError(target, err)
	}
	defer unix.Close(parent)
	m, err := mountOn(parent, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return d.forget(target)
	case errors.Is(err, unix.ELOOP):
		return status.Errorf(codes.InvalidArgument, "target %s is a symlink: not published here, left alone", target)
	case err != nil:
		return unpublishError(target, err)
	case m != nil && !d.owns(rec, m):
		return status.Errorf(codes.FailedPrecondition, "%s holds a mount this plugin did not make (%s %s of %s): left alone", target, m.FSType, m.Root, m.Source)
	case m != nil:
		if err := bind.DetachAt(parent, name, uint64(m.ID)); err != nil {
			return status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	case p == nil:
		return nil // nothing of this plugin's there: its folder is the kubelet's
	}
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	return d.forget(target)
}

func unpublishError(target string, err error) error {
	if status.Code(err) != codes.Unknown {
		return err
	}
	return status.Errorf(codes.Internal, "target %s: %v", target, err)
}

// forget releases target's lease and drops its record.
func (d *Driver) forget(target string) error {
	p := d.published[target]
	if p == nil {
		return nil
	}
	if p.lease != nil {
		_ = p.lease.Release()
	}
	delete(d.published, target)
	if err := d.saveRecords(); err != nil {
		return status.Errorf(codes.Internal, "record of what is published (--state-dir %s): %v", d.StateDir, err)
	}
	return nil
}

// unpublish detaches the session a publish just mounted at target, undoing it part-way; target's folder is the
// one publish opened.
func unpublish(target string) error {
	parent, err := unix.Open(filepath.Dir(target), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	name := filepath.Base(target)
	m, err := mountOn(parent, name)
	if err != nil || m == nil {
		return err
	}
	if m.FSType != fuseType || !strings.HasPrefix(m.Root, "/sessions/") {
		return fmt.Errorf("%s holds a mount publish did not make (%s %s): left alone", target, m.FSType, m.Root)
	}
	return bind.DetachAt(parent, name, uint64(m.ID))
}

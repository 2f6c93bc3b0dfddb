package csi

import (
	"errors"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/bind"
)

// Unpublishing detaches only what this plugin published: a target beneath the kubelet's folder that its record
// names, or whose mount is a clone of the node's mount (the mount table's device and filesystem type are the
// node mount's, its root a session's folder). A mount someone else made there is left alone, and said so.

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

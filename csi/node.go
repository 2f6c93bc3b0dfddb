package csi

import (
	"context"
	"slices"
	"strings"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// NodeGetInfo names the node (its sessions' leases name it too).
func (d *Driver) NodeGetInfo(context.Context, *spec.NodeGetInfoRequest) (*spec.NodeGetInfoResponse, error) {
	return &spec.NodeGetInfoResponse{NodeId: d.NodeID}, nil
}

// NodeGetCapabilities: none beyond publishing (no staging: the node's mount is the stage).
func (d *Driver) NodeGetCapabilities(context.Context, *spec.NodeGetCapabilitiesRequest) (*spec.NodeGetCapabilitiesResponse, error) {
	return &spec.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume takes the session's run lease and lays the session at the target path (publish.go), once the
// pod may have it (tenancy.go). It is idempotent: the same session at the same target, read-only alike, is
// published already, also by a plugin before a restart (its record, or the mount table).
func (d *Driver) NodePublishVolume(_ context.Context, req *spec.NodePublishVolumeRequest) (*spec.NodePublishVolumeResponse, error) {
	target, err := d.checkTarget(req.GetVolumeId(), req.GetTargetPath())
	switch {
	case err != nil:
		return nil, err
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "no volume capability")
	case req.GetStagingTargetPath() != "":
		return nil, status.Error(codes.InvalidArgument, "this plugin does not stage volumes")
	}
	if err := checkCapabilities([]*spec.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	a, err := parseAttributes(req.GetVolumeContext())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ro := req.GetReadonly() || req.GetVolumeCapability().GetAccessMode().GetMode() == spec.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.published == nil {
		d.published = map[string]*publication{}
	}
	id, err := d.sessionFor(req.GetVolumeId(), a)
	if err != nil {
		return nil, err
	}
	if p, err := d.publishedAt(target); err != nil || p != nil {
		if err != nil {
			return nil, err
		}
		if p.rec.Session != id || p.rec.ReadOnly != ro {
			return nil, status.Errorf(codes.AlreadyExists, "%s holds session %s already (read-only: %t)", target, p.rec.Session, p.rec.ReadOnly)
		}
		if p.lease == nil {
			if p.lease, err = d.Store.TryLease(id, d.holder()); err != nil {
				return nil, leaseError(err)
			}
		}
		return &spec.NodePublishVolumeResponse{}, nil
	}
	node, err := d.nodeMount()
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%v", err)
	}
	lease, err := d.Store.TryLease(id, d.holder())
	if err != nil {
		return nil, leaseError(err)
	}
	// Recorded before it is mounted, so a plugin that dies part-way knows the mount for its own.
	d.published[target] = &publication{lease: lease, rec: record{Target: target, Session: id, ReadOnly: ro, VolumeID: req.GetVolumeId(),
		Major: node.Major, Minor: node.Minor, Root: "/sessions/" + id}}
	if err := d.saveRecords(); err != nil {
		_ = d.forget(target)
		return nil, status.Errorf(codes.Internal, "record of what is published (--state-dir %s): %v", d.StateDir, err)
	}
	if err := d.publish(id, target, ro); err != nil {
		_ = d.forget(target)
		return nil, err
	}
	return &spec.NodePublishVolumeResponse{}, nil
}

// publishedAt is what this plugin published at target: its record, or a clone of the node's mount found there
// with no record (a plugin that lost its state folder), which is then recorded. nil: nothing of the plugin's.
func (d *Driver) publishedAt(target string) (*publication, error) {
	if p := d.published[target]; p != nil {
		return p, nil
	}
	m, err := d.mountAt(target)
	if err != nil || m == nil || !d.owns(nil, m) {
		return nil, nil // publish itself says what is wrong with the target
	}
	id := strings.TrimPrefix(m.Root, "/sessions/")
	if layout.ValidateID(id) != nil {
		return nil, status.Errorf(codes.AlreadyExists, "%s holds a folder of the node's mount (%s) already", target, m.Root)
	}
	p := &publication{rec: record{Target: target, Session: id, ReadOnly: slices.Contains(strings.Split(m.Options, ","), "ro"),
		Major: m.Major, Minor: m.Minor, Root: m.Root}}
	d.published[target] = p
	if err := d.saveRecords(); err != nil {
		return nil, status.Errorf(codes.Internal, "record of what is published (--state-dir %s): %v", d.StateDir, err)
	}
	return p, nil
}

// NodeUnpublishVolume unmounts what this plugin published at the target, removes the folder and releases the
// lease (unpublish.go). It is idempotent: a target already gone is unpublished. A target outside the kubelet's
// folder, or holding a mount the plugin did not make, is refused and left alone.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *spec.NodeUnpublishVolumeRequest) (*spec.NodeUnpublishVolumeResponse, error) {
	target, err := d.checkTarget(req.GetVolumeId(), req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.unpublishTarget(target); err != nil {
		return nil, err
	}
	return &spec.NodeUnpublishVolumeResponse{}, nil
}

// Close releases every lease (the plugin stops; what it published stays mounted for the pods).
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, p := range d.published {
		if p.lease != nil {
			_ = p.lease.Release()
		}
		delete(d.published, t) // its record stays: the mount stays
	}
}

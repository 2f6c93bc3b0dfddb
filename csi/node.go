package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"

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

// NodePublishVolume takes the session's run lease and lays the session at the target path (publish.go). It is
// idempotent: the same session at the same target is published already.
func (d *Driver) NodePublishVolume(_ context.Context, req *spec.NodePublishVolumeRequest) (*spec.NodePublishVolumeResponse, error) {
	target, err := checkTarget(req.GetVolumeId(), req.GetTargetPath())
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
	id := a.session
	switch {
	case id == "" && a.ephemeral:
		return nil, status.Error(codes.InvalidArgument, "an inline volume names its session: volumeAttributes: {session: ID}")
	case id == "":
		id = req.GetVolumeId()
	}
	if err := layout.ValidateID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "session: %v", err)
	}
	ro := req.GetReadonly() || req.GetVolumeCapability().GetAccessMode().GetMode() == spec.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.published == nil {
		d.published = map[string]*publication{}
	}
	if p := d.published[target]; p != nil {
		if p.id == id && p.ro == ro {
			return &spec.NodePublishVolumeResponse{}, nil
		}
		return nil, status.Errorf(codes.AlreadyExists, "%s holds session %s already", target, p.id)
	}
	if !d.Store.Exists(id) {
		if !a.create {
			return nil, status.Errorf(codes.NotFound, "no session %s (and create=false)", id)
		}
		if err := d.create(id, a); err != nil {
			return nil, err
		}
	}
	lease, err := d.Store.TryLease(id, d.holder())
	if err != nil {
		return nil, leaseError(err)
	}
	if err := d.publish(id, target, ro); err != nil {
		lease.Release()
		return nil, err
	}
	d.published[target] = &publication{id: id, ro: ro, lease: lease}
	return &spec.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts what publishing made at the target, removes the folder and releases the lease.
// It is idempotent: a target already gone is unpublished.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *spec.NodeUnpublishVolumeRequest) (*spec.NodeUnpublishVolumeResponse, error) {
	target, err := checkTarget(req.GetVolumeId(), req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := unpublish(target); err != nil {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	if p := d.published[target]; p != nil {
		_ = p.lease.Release()
		delete(d.published, target)
	}
	return &spec.NodeUnpublishVolumeResponse{}, nil
}

// checkTarget checks a request's volume id and target path, and returns the path cleaned.
func checkTarget(volumeID, target string) (string, error) {
	switch {
	case volumeID == "":
		return "", status.Error(codes.InvalidArgument, "no volume id")
	case target == "" || !filepath.IsAbs(target):
		return "", status.Errorf(codes.InvalidArgument, "target path %q: want an absolute path", target)
	}
	return filepath.Clean(target), nil
}

// Close releases every lease (the plugin stops; what it published stays mounted for the pods).
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, p := range d.published {
		_ = p.lease.Release()
		delete(d.published, t)
	}
}

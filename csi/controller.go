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
	"github.com/sessionfs/sessionfs/session"
)

// A persistent volume is a session: CreateVolume makes it (its id is the volume's name, or the StorageClass's
// "session" parameter), DeleteVolume moves it to the store's trash (`sessionfs trash restore` brings it back).

// ControllerGetCapabilities: volumes are made and deleted; nothing is attached (the store is on every node).
func (d *Driver) ControllerGetCapabilities(context.Context, *spec.ControllerGetCapabilitiesRequest) (*spec.ControllerGetCapabilitiesResponse, error) {
	return &spec.ControllerGetCapabilitiesResponse{Capabilities: []*spec.ControllerServiceCapability{{
		Type: &spec.ControllerServiceCapability_Rpc{Rpc: &spec.ControllerServiceCapability_RPC{Type: spec.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}

// CreateVolume makes the session (idempotent: an existing one is the volume).
func (d *Driver) CreateVolume(_ context.Context, req *spec.CreateVolumeRequest) (*spec.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume name")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "sessions are not made from snapshots or other volumes (sessionfs fork copies one)")
	}
	a, err := parseAttributes(req.GetParameters())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	id := a.session
	if id == "" {
		id = req.GetName()
	}
	if err := layout.ValidateID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume name: %v", err)
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	if !d.Store.Exists(id) {
		if err := d.create(id, a, capacity); err != nil {
			return nil, err
		}
	}
	// The session is the volume if it fits the capacity asked (the session's own, once a CreateVolume made it).
	m, err := d.Store.Get(id)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "session %s: %v", id, err)
	}
	if !fits(m.CapacityBytes, req.GetCapacityRange()) {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with %d bytes, outside the capacity asked (%d to %d bytes)",
			id, m.CapacityBytes, req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes())
	}
	if m.CapacityBytes != 0 {
		capacity = m.CapacityBytes
	}
	return &spec.CreateVolumeResponse{Volume: &spec.Volume{VolumeId: id, VolumeContext: map[string]string{AttrSession: id},
		CapacityBytes: capacity}}, nil
}

// fits reports whether a volume of capacity bytes satisfies r (0 bytes: no capacity was asked when it was made,
// a session has no size of its own, so it fits any).
func fits(capacity int64, r *spec.CapacityRange) bool {
	return capacity == 0 || (capacity >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || capacity <= r.GetLimitBytes()))
}

// create makes session id with a's labels, profile and namespace, and the capacity a CreateVolume asked.
func (d *Driver) create(id string, a attributes, capacity int64) error {
	profile := ""
	if a.profile != "" {
		if d.Profiles == "" {
			return status.Errorf(codes.InvalidArgument, "profile %q: this plugin has no --profiles folder", a.profile)
		}
		profile = filepath.Join(d.Profiles, a.profile)
		if st, err := os.Lstat(profile); err != nil || !st.IsDir() {
			return status.Errorf(codes.NotFound, "profile %q: no such folder in %s", a.profile, d.Profiles)
		}
	}
	opts := layout.CreateOptions{Labels: a.labels, Profile: profile, Namespace: a.namespace, CapacityBytes: capacity}
	_, err := session.Create(d.Store, id, session.Options{CreateOptions: opts, Mountpoint: d.Mountpoint})
	if err != nil && !errors.Is(err, layout.ErrExists) {
		return status.Errorf(codes.Internal, "create session %s: %v", id, err)
	}
	return nil
}

// DeleteVolume moves the session to the trash (idempotent: a session already gone is deleted). A session some
// pod is using (its lease is held) is not removed.
func (d *Driver) DeleteVolume(_ context.Context, req *spec.DeleteVolumeRequest) (*spec.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	}
	if layout.ValidateID(id) != nil || !d.Store.Exists(id) {
		return &spec.DeleteVolumeResponse{}, nil // never made here: nothing to delete
	}
	lease, err := d.Store.TryLease(id, d.holder())
	if err != nil {
		return nil, leaseError(err)
	}
	defer lease.Release()
	if _, err := d.Store.Remove(id); err != nil && !errors.Is(err, layout.ErrNotFound) {
		return nil, status.Errorf(codes.Internal, "remove session %s: %v", id, err)
	}
	return &spec.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms what a session can be: a folder mounted by one node at a time.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *spec.ValidateVolumeCapabilitiesRequest) (*spec.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume id")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	if layout.ValidateID(id) != nil || !d.Store.Exists(id) {
		return nil, status.Errorf(codes.NotFound, "no session %q", id)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &spec.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &spec.ValidateVolumeCapabilitiesResponse{Confirmed: &spec.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// Name is the driver's name: the CSIDriver object's and the pods' `driver:`.
const Name = "sessionfs.dev"

// Driver serves the CSI Identity, Controller and Node services for one store on one node.
type Driver struct {
	spec.UnimplementedIdentityServer
	spec.UnimplementedControllerServer
	spec.UnimplementedNodeServer

	Store *layout.Store
	// Mountpoint is where the node's sessionfs mount serves the store.
	Mountpoint string
	NodeID     string
	Version    string
	// Profiles is the folder of the profiles a volume may name ("" : none may be named).
	Profiles string
	// KubeletRoot is the kubelet's folder (DefaultKubeletRoot when ""): targets are beneath it, nothing else is
	// published or unpublished.
	KubeletRoot string
	// StateDir keeps the record of what this plugin published, so a restarted plugin knows its own mounts (""
	// keeps it in memory only).
	StateDir string
	// SuccessorWait is how long a plugin told to stop waits for the next one to take the node's mount over
	// (handover.go) before it unmounts it (0: it does not wait).
	SuccessorWait time.Duration

	mu        sync.Mutex
	published map[string]*publication // target path -> what is published there
}

// publication is a session published at a target path, with the run lease it holds until unpublished (nil when
// a restarted plugin could not take it back).
type publication struct {
	rec   record
	lease *layout.Lease
}

// Serve serves the driver's gRPC services on endpoint (unix:///path, unix:/path or a path) until ctx ends.
func (d *Driver) Serve(ctx context.Context, endpoint string) error {
	path, err := socketPath(endpoint)
	if err != nil {
		return err
	}
	if err := d.restore(); err != nil {
		return err
	}
	// A socket left by a plugin that died is removed; anything else at the path is not ours to remove.
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("endpoint %s exists and is not a socket", path)
		}
		_ = os.Remove(path)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	// Removed at the end only while it is this plugin's: in a DaemonSet update the next plugin listens on the same
	// path before this one stops.
	l.SetUnlinkOnClose(false)
	var own unix.Stat_t
	_ = unix.Stat(path, &own)
	defer func() {
		var now unix.Stat_t
		if unix.Stat(path, &now) == nil && now.Dev == own.Dev && now.Ino == own.Ino {
			_ = os.Remove(path)
		}
	}()
	go d.adoptLeases(ctx.Done())
	srv := grpc.NewServer()
	spec.RegisterIdentityServer(srv, d)
	spec.RegisterControllerServer(srv, d)
	spec.RegisterNodeServer(srv, d)
	go func() { <-ctx.Done(); srv.GracefulStop() }()
	return srv.Serve(l)
}

// CheckEndpoint reports an endpoint Serve cannot listen on (before anything is mounted for it).
func CheckEndpoint(endpoint string) error {
	_, err := socketPath(endpoint)
	return err
}

// socketPath reads a CSI endpoint: the convention is unix:///csi/csi.sock.
func socketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("no endpoint: give --endpoint unix:///csi/csi.sock (or set CSI_ENDPOINT)")
	}
	if !strings.Contains(endpoint, "://") && !strings.HasPrefix(endpoint, "unix:") {
		return endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" {
		return "", fmt.Errorf("endpoint %q: want unix:///path/to/csi.sock", endpoint)
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	if p == "" {
		return "", fmt.Errorf("endpoint %q: no socket path", endpoint)
	}
	return p, nil
}

// GetPluginInfo names the driver.
func (d *Driver) GetPluginInfo(context.Context, *spec.GetPluginInfoRequest) (*spec.GetPluginInfoResponse, error) {
	v := d.Version
	if v == "" {
		v = "dev"
	}
	return &spec.GetPluginInfoResponse{Name: Name, VendorVersion: v}, nil
}

// GetPluginCapabilities: a controller (sessions made and removed as persistent volumes).
func (d *Driver) GetPluginCapabilities(context.Context, *spec.GetPluginCapabilitiesRequest) (*spec.GetPluginCapabilitiesResponse, error) {
	return &spec.GetPluginCapabilitiesResponse{Capabilities: []*spec.PluginCapability{{
		Type: &spec.PluginCapability_Service_{Service: &spec.PluginCapability_Service{Type: spec.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

// Probe is ready once the node's mount serves the store.
func (d *Driver) Probe(context.Context, *spec.ProbeRequest) (*spec.ProbeResponse, error) {
	if _, err := os.Stat(d.Mountpoint + "/sessions"); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "the sessionfs mount at %s does not serve: %v", d.Mountpoint, err)
	}
	return &spec.ProbeResponse{}, nil
}

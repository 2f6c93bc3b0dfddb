//go:build !nobackends

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/csi"
)

// csiOptions are csi's flags.
type csiOptions struct {
	endpoint, nodeID, mnt, profiles, kubeletRoot, stateDir string
	successorWait                                          time.Duration
}

func (a *app) csiCmd() *cobra.Command {
	var o csiOptions
	cmd := &cobra.Command{
		Use:   "csi",
		Short: backendCommands["csi"],
		Long: `csi serves the Container Storage Interface on --endpoint, so a pod asks for a session as a volume:

  volumes:
    - name: session
      csi:
        driver: ` + csi.Name + `
        volumeAttributes: {session: web}

and gets at its mount path what "sessionfs run --backend docker" gives a container at /session: the session's
folder from this node's sessionfs mount (every cwd's transcript folder a view of the one), workspace, app and
mcps bound natively from the store, nothing outside the session reachable. Publishing takes the session's run
lease until the pod ends: one pod per session across every node sharing the store. Volume attributes: session
(the id), create (true: make it if missing; false: it must exist), profile (a name beneath --profiles), labels
("team=web,env=dev"). A persistent volume (a PVC of a StorageClass with this provisioner) is a session made on
CreateVolume (its id is the volume's name) and moved to the trash on DeleteVolume.
Tenancy: a session belongs to the namespace that made it. An inline volume (the CSIDriver needs podInfoOnMount:
true) makes sessions into its pod's namespace and names only that namespace's; a persistent volume's handle is
trusted (Kubernetes bound it to the pod's claim). Only targets beneath --kubelet-root are published, and only
what this plugin published there (its record in --state-dir, kept across restarts) is unpublished.
The node's mount at --mountpoint is used if it serves the store, and made (and unmounted at exit) otherwise; one
held by the plugin's pod before (a DaemonSet update: another pid namespace) is taken over, and a plugin told to
stop waits up to --successor-wait for the next one to take its mount over before it unmounts it.
The plugin runs as root (it mounts). See README, "Running on Kubernetes", and contrib/kubernetes/.`,
		Example: `  sessionfs csi --endpoint unix:///csi/csi.sock --node-id "$NODE_NAME" --store /mnt/shared/sessions
  CSI_ENDPOINT=unix:///csi/csi.sock sessionfs csi --mountpoint /var/lib/sessionfs/mnt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			return a.runCSI(o)
		},
	}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&o.endpoint, "endpoint", envOr("CSI_ENDPOINT", "unix:///csi/csi.sock"), "the gRPC endpoint (a unix socket; $CSI_ENDPOINT)")
	cmd.Flags().StringVar(&o.nodeID, "node-id", envOr("NODE_ID", host), "this node's name (the leases name it; $NODE_ID)")
	cmd.Flags().StringVar(&o.mnt, "mountpoint", defaultMountpoint(), "where this node's sessionfs mount serves the store")
	cmd.Flags().StringVar(&o.profiles, "profiles", "", "the folder of profiles (.claude templates) a volume's profile attribute may name")
	cmd.Flags().StringVar(&o.kubeletRoot, "kubelet-root", csi.DefaultKubeletRoot, "the kubelet's folder: targets are beneath it")
	cmd.Flags().StringVar(&o.stateDir, "state-dir", "/var/lib/sessionfs/csi", "where the plugin records what it published (kept across restarts)")
	wait, _ := time.ParseDuration(envOr("CSI_SUCCESSOR_WAIT", "0s"))
	cmd.Flags().DurationVar(&o.successorWait, "successor-wait", wait, "at SIGTERM, how long to wait for the next plugin (a DaemonSet update's new pod) to take the node's mount over before unmounting it ($CSI_SUCCESSOR_WAIT)")
	return cmd
}

// runCSI serves the CSI plugin on o's endpoint until SIGINT or SIGTERM, using or starting the node's mount.
func (a *app) runCSI(o csiOptions) error {
	s, err := a.createStore()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(o.mnt)
	if err != nil {
		return err
	}
	d := &csi.Driver{Store: s, Mountpoint: abs, NodeID: o.nodeID, Version: version, Profiles: o.profiles,
		KubeletRoot: o.kubeletRoot, StateDir: o.stateDir, SuccessorWait: o.successorWait}
	if err := csi.PrepareControlDir(); err != nil {
		return err
	}
	stop, err := d.EnsureMount(confine.Options{Mode: envOr("SESSIONFS_CONFINE", confine.On)})
	if err != nil {
		return err
	}
	// The leases go last: a plugin waiting for its successor still serves its pods' sessions (the next plugin takes
	// them as they are let go).
	defer d.Close()
	defer stop()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	fmt.Fprintf(os.Stderr, "sessionfs: CSI driver %s for node %s serving %s (mount %s) on %s\n", csi.Name, o.nodeID, s.Root, abs, o.endpoint)
	return d.Serve(ctx, o.endpoint)
}

// check refuses what would fail the plugin later, before anything is made: bad input mounts nothing.
func (o *csiOptions) check() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the CSI plugin mounts volumes: run it as root (in Kubernetes: a privileged DaemonSet)")
	}
	if o.nodeID == "" {
		return usageError("no node id: give --node-id (in Kubernetes: the node's name, from spec.nodeName)")
	}
	if err := csi.CheckEndpoint(o.endpoint); err != nil {
		return usageError(err.Error())
	}
	if !filepath.IsAbs(o.kubeletRoot) || !filepath.IsAbs(o.stateDir) {
		return usageError("--kubelet-root and --state-dir want absolute paths")
	}
	return nil
}

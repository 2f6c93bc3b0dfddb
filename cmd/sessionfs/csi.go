package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/csi"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/session"
)

func (a *app) csiCmd() *cobra.Command {
	var endpoint, nodeID, mnt, profiles, kubeletRoot, stateDir string
	cmd := &cobra.Command{
		Use:   "csi",
		Short: "Serve sessions as Kubernetes/Nomad volumes: a CSI plugin (driver " + csi.Name + ")",
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
The node's mount at --mountpoint is used if it serves the store, and made (and unmounted at exit) otherwise.
The plugin runs as root (it mounts). See README, "Running on Kubernetes", and contrib/kubernetes/.`,
		Example: `  sessionfs csi --endpoint unix:///csi/csi.sock --node-id "$NODE_NAME" --store /mnt/shared/sessions
  CSI_ENDPOINT=unix:///csi/csi.sock sessionfs csi --mountpoint /var/lib/sessionfs/mnt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return fmt.Errorf("the CSI plugin mounts volumes: run it as root (in Kubernetes: a privileged DaemonSet)")
			}
			if nodeID == "" {
				return usageError("no node id: give --node-id (in Kubernetes: the node's name, from spec.nodeName)")
			}
			if err := csi.CheckEndpoint(endpoint); err != nil {
				return usageError(err.Error())
			}
			// Checked before anything is made: bad input mounts nothing.
			if !filepath.IsAbs(kubeletRoot) || !filepath.IsAbs(stateDir) {
				return usageError("--kubelet-root and --state-dir want absolute paths")
			}
			s, err := a.createStore()
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(mnt)
			if err != nil {
				return err
			}
			stop, err := ensureMount(s, abs)
			if err != nil {
				return err
			}
			defer stop()
			d := &csi.Driver{Store: s, Mountpoint: abs, NodeID: nodeID, Version: version, Profiles: profiles,
				KubeletRoot: kubeletRoot, StateDir: stateDir,
				Create: func(id string, opts layout.CreateOptions) error {
					_, err := session.Create(s, id, session.Options{CreateOptions: opts, Mountpoint: abs})
					return err
				}}
			defer d.Close()
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			fmt.Fprintf(os.Stderr, "sessionfs: CSI driver %s for node %s serving %s (mount %s) on %s\n", csi.Name, nodeID, s.Root, abs, endpoint)
			return d.Serve(ctx, endpoint)
		},
	}
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&endpoint, "endpoint", envOr("CSI_ENDPOINT", "unix:///csi/csi.sock"), "the gRPC endpoint (a unix socket; $CSI_ENDPOINT)")
	cmd.Flags().StringVar(&nodeID, "node-id", envOr("NODE_ID", host), "this node's name (the leases name it; $NODE_ID)")
	cmd.Flags().StringVar(&mnt, "mountpoint", defaultMountpoint(), "where this node's sessionfs mount serves the store")
	cmd.Flags().StringVar(&profiles, "profiles", "", "the folder of profiles (.claude templates) a volume's profile attribute may name")
	cmd.Flags().StringVar(&kubeletRoot, "kubelet-root", csi.DefaultKubeletRoot, "the kubelet's folder: targets are beneath it")
	cmd.Flags().StringVar(&stateDir, "state-dir", "/var/lib/sessionfs/csi", "where the plugin records what it published (kept across restarts)")
	return cmd
}

// ensureMount uses the store's mount at mnt if one serves it, and otherwise starts `sessionfs mount` for it (a
// daemon of its own, confined as every root mount is); stop stops what was started here. A plugin that dies
// leaves that mount serving its pods, and the next plugin uses it.
func ensureMount(s *layout.Store, mnt string) (stop func(), err error) {
	serving := func() bool {
		m, ok := mount.Find(s.Root)
		return ok && m.Mountpoint == mnt && !mount.Stale(mnt)
	}
	if serving() {
		return func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Pods run as any uid; the pods' binds are the plugin's own (publish.go), so the mount binds nothing.
	daemon := exec.Command(exe, "--store", s.Root, "mount", mnt, "--allow-other", "--max-binds", "0")
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	// Started with the bounding set its confinement keeps, so the daemon need not shrink it itself.
	if err := confine.StartDaemon(daemon, confine.Options{Mode: envOr("SESSIONFS_CONFINE", confine.On)}); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = daemon.Wait(); close(exited) }()
	for start := time.Now(); !serving(); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			return nil, fmt.Errorf("sessionfs mount %s ended before it served (its output is above)", mnt)
		default:
		}
		if time.Since(start) > 30*time.Second {
			_ = daemon.Process.Kill()
			return nil, fmt.Errorf("sessionfs mount %s did not serve within 30 s", mnt)
		}
	}
	return func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = mount.Unmount(mnt) // busy (pods still hold it): detached, served until they leave
			_ = daemon.Process.Signal(syscall.SIGTERM)
		}
	}, nil
}

package csi

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// EnsureMount uses the store's mount at d.Mountpoint if one serves it, and otherwise starts `sessionfs mount` for
// it (the plugin runs in the sessionfs binary: a daemon of its own, confined as co says, as every root mount is);
// stop stops what was started here, unless the next plugin takes it over meanwhile (csi/handover.go). A plugin that
// dies leaves that mount serving its pods, and the next plugin uses it; a mount held in another pid namespace (the
// plugin's pod before, in a DaemonSet update) is taken over (takeMount).
func (d *Driver) EnsureMount(co confine.Options) (stop func(), err error) {
	mnt := d.Mountpoint
	serving := func() bool {
		m, ok := mount.Find(d.Store.Root)
		return ok && m.Mountpoint == mnt && !mount.Stale(mnt)
	}
	if serving() {
		if takeover.HeldHere(mnt) {
			return func() {}, nil
		}
		return d.takeMount(co)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Pods run as any uid; the pods' binds are the plugin's own (publish.go), so the mount binds nothing.
	daemon := exec.Command(exe, "--store", d.Store.Root, "mount", mnt, "--allow-other", "--max-binds", "0")
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	// Started with the bounding set its confinement keeps, so the daemon need not shrink it itself.
	if err := confine.StartDaemon(daemon, co); err != nil {
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
	return d.unlessHandedOver(func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = mount.Unmount(mnt) // busy (pods still hold it): detached, served until they leave
			_ = daemon.Process.Signal(syscall.SIGTERM)
		}
	}), nil
}

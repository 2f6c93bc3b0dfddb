package csi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// The DaemonSet's update. The node's mount is held by a helper in the plugin's pod (package mount/takeover),
// and a pod's processes end with it. So the DaemonSet starts the new pod before it stops the old one (maxSurge 1,
// contrib/kubernetes/node.yaml), both see the mounts' control folder (a hostPath, root's alone), and:
//   - the new plugin, finding the node's mount held by no process it can see (the old pod's pid namespace), asks
//     its holder for all it holds (takeover.TakeHolder), starts a helper of its own with it, whose confined daemon
//     takes the connection over; the old holder lets go without aborting (takeMount);
//   - the old plugin, told to stop, waits (up to SuccessorWait) for that to happen, and exits leaving the mount
//     serving; with no successor by then, it stops as before: its mount is unmounted (handedOver).
// What the plugin published and the leases go by the state folder (record.go) as at a restart; a lease the old
// plugin still held when the new one started is taken once it is let go (adoptLeases).

// takeMount takes the node's mount at d.Mountpoint over from the holder in another pid namespace, and returns what
// stops it. With no holder to ask (an unconfined mount) the mount is used as it is, as a plugin restarted beside it
// does. A holder that cannot hand over (another state format, a build before moves) is an error: this plugin stops
// before it serves, so a DaemonSet update halts (the new pod never ready) and the pod before serves on.
func (d *Driver) takeMount(co confine.Options) (stop func(), err error) {
	mnt := d.Mountpoint
	start := time.Now()
	h, err := takeover.TakeHolder(d.Store.Root, mnt, func(c *exec.Cmd) error { return confine.StartDaemon(c, co) })
	if errors.Is(err, takeover.ErrNoHolder) {
		fmt.Fprintf(os.Stderr, "sessionfs csi: the node's mount %s is held by no process of this pod and no holder answers: it is used as it is\n", mnt)
		return func() {}, nil
	}
	if h == nil {
		return nil, fmt.Errorf("the node's mount %s is held by the plugin's pod before, which did not hand it over: %v; "+
			"this plugin stops so that it serves on (a DaemonSet update halts here: roll back to its build, or move the pods using sessions off this node and delete that pod)", mnt, err)
	}
	exited := make(chan struct{})
	go func() { _ = h.Cmd.Wait(); close(exited) }()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs csi: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "sessionfs csi: took the node's mount %s over from the plugin before (sessionfs %s): daemon %d of sessionfs %s serves it (in %s)\n",
			mnt, h.From, h.Daemon, h.To, time.Since(start).Round(time.Millisecond))
	}
	return d.unlessHandedOver(func() {
		// As a mount daemon the plugin started stops (EnsureMount): the daemon serving now unmounts.
		if pid, err := inspect.ServingPID(mnt); err == nil {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = mount.Unmount(mnt) // busy (pods still hold it): detached, served until they leave
		}
	}), nil
}

// successorPoll is how often a stopping plugin looks whether the next one took the node's mount over.
const successorPoll = 50 * time.Millisecond

// unlessHandedOver is stop, unless a plugin in another pid namespace takes the node's mount over within
// d.SuccessorWait (handedOver).
func (d *Driver) unlessHandedOver(stop func()) func() {
	return func() {
		if !d.handedOver() {
			stop()
		}
	}
}

// handedOver waits, up to d.SuccessorWait, for the node's mount to be held by no process of this pid namespace
// while it serves: the next plugin took it over. The mount going stale or away ends the wait too.
func (d *Driver) handedOver() bool {
	mnt := d.Mountpoint
	if d.SuccessorWait <= 0 {
		return false
	}
	fmt.Fprintf(os.Stderr, "sessionfs csi: stopping: the node's mount %s serves on if the next plugin takes it over within %s\n", mnt, d.SuccessorWait)
	for deadline := time.Now().Add(d.SuccessorWait); ; time.Sleep(successorPoll) {
		if !takeover.HeldHere(mnt) {
			if _, ok := mount.Find(d.Store.Root); ok && !mount.Stale(mnt) {
				fmt.Fprintf(os.Stderr, "sessionfs csi: the next plugin holds the node's mount %s: this one exits, the mount serving\n", mnt)
				return true
			}
			fmt.Fprintf(os.Stderr, "sessionfs csi: the node's mount %s is held by no one now\n", mnt)
			return false
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "sessionfs csi: no plugin took the node's mount %s over within %s: it is unmounted, as a plugin that stops unmounts it\n", mnt, d.SuccessorWait)
			return false
		}
	}
}

// PrepareControlDir makes the mounts' control folder root's alone, as mount wants it: in a pod it is a hostPath
// the kubelet made 0755 (DirectoryOrCreate), shared with the plugin's next pod. A folder of anyone else's, or a
// link, is left for mount to refuse.
func PrepareControlDir() error {
	dir := takeover.ControlDir()
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // mount makes it
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o077 == 0 {
		return nil
	}
	return os.Chmod(dir, 0o700)
}

// leasePoll is how often a plugin tries again for the leases of what it published that another held (adoptLeases).
const leasePoll = 500 * time.Millisecond

// adoptLeases takes, as they are let go, the leases of published targets that restore could not take (the plugin
// before still ran: a DaemonSet update starts the new pod first), until each is held or done is closed.
func (d *Driver) adoptLeases(done <-chan struct{}) {
	for {
		d.mu.Lock()
		missing := 0
		for t, p := range d.published {
			if p.lease != nil {
				continue
			}
			lease, err := d.Store.TryLease(p.rec.Session, d.holder())
			if err != nil {
				missing++
				continue
			}
			p.lease = lease
			fmt.Fprintf(os.Stderr, "sessionfs csi: took session %s's lease for %s (the plugin before let it go)\n", p.rec.Session, t)
		}
		d.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(leasePoll):
		}
	}
}

// Package inspect reads what the kernel shows of a FUSE mount without asking the mount (a hung one answers
// nothing): its connection from the mount table, the processes holding a descriptor of that connection (/proc's
// fdinfo), whether one of them is a holder (its capabilities, or a normal user's by its role) and when each
// started; and it aborts a connection (fusectl). The CLI, the CSI plugin and package mount/takeover ask it.
package inspect

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// ErrNoConnectionInfo: the kernel does not say which FUSE connection a /dev/fuse descriptor serves.
var ErrNoConnectionInfo = errors.New("the kernel does not say which mount a /dev/fuse descriptor serves " +
	"(its fdinfo shows fuse_connection from Linux 6.16)")

// ServingPID finds the process that serves the mount at mnt from the kernel, not from anything a process says of
// itself (any user can start a process with any command line): the process holding a /dev/fuse descriptor whose
// connection (fuse_connection in the descriptor's /proc fdinfo: the connection's device number) is the mount's
// device as the mount table gives it, so that the mount itself is not asked (a hung one answers nothing). Other
// users' descriptors are readable by root only.
func ServingPID(mnt string) (int, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 {
		return 0, fmt.Errorf("%s is not in the mount table", mnt)
	}
	want := KernelDev(uint32(mounts[0].Major), uint32(mounts[0].Minor))
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var holders []int
	var unnamed, unreadable bool // a /dev/fuse descriptor without fuse_connection; a process whose fds are hidden
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		conns, err := FUSEConnections(pid)
		if errors.Is(err, iofs.ErrPermission) {
			unreadable = true
		}
		for _, c := range conns {
			switch {
			case c < 0:
				unnamed = true
			case uint64(c) == want && !slices.Contains(holders, pid):
				holders = append(holders, pid)
			}
		}
	}
	// A helper that holds the connection for a daemon to take it over (takeover.go) serves nothing. It is told by a
	// capability the serving process never holds once confined, which it cannot take back: not by its command
	// line, which a subverted daemon could make the helper's.
	if len(holders) > 1 {
		holders = slices.DeleteFunc(holders, UsersHolder(mounts[0].VFSOptions)) // a normal user's (mount's fusermount.go)
		holders = slices.DeleteFunc(holders, HoldsHelperCaps)
		if len(holders) == 0 {
			return 0, fmt.Errorf("the connection of %s is held by its helper, and its daemon is not confined yet (starting): ask again", mnt)
		}
	}
	switch {
	case len(holders) == 1:
		return holders[0], nil
	case len(holders) > 1:
		return 0, fmt.Errorf("the connection of %s is held by several processes: %v", mnt, holders)
	case unnamed:
		return 0, ErrNoConnectionInfo
	case unreadable:
		return 0, fmt.Errorf("no process this user may inspect holds the connection of %s (run as root)", mnt)
	}
	return 0, fmt.Errorf("no process holds the connection of %s (its daemon is gone)", mnt)
}

// fuseConnections lists the connections of the /dev/fuse descriptors pid holds (-1: the kernel does not say).
// Descriptors are told by their link's text alone: stat would follow one into a hung mount and wait with it.
func FUSEConnections(pid int) ([]int64, error) {
	dir, alive := liveThread(pid)
	if !alive {
		return nil, nil
	}
	return fuseConnectionsIn(dir)
}

// holdsConnection says whether process pid holds a descriptor of FUSE connection dev; known is false when it
// holds no /dev/fuse descriptor whose connection the kernel names. A process executing a new binary (a holder's
// upgrade) shows its descriptors half, or none, for a moment: it looks again, a millisecond apart, before it says
// no (TestFuseConnectionsThroughAnExec: about one look in 1,000 during such execs).
func HoldsConnection(pid int, dev int64) (holds, known bool) {
	for try := range 5 {
		if try > 0 {
			time.Sleep(time.Millisecond)
		}
		conns, _ := FUSEConnections(pid)
		if slices.Contains(conns, dev) {
			return true, true
		}
		known = known || slices.ContainsFunc(conns, func(c int64) bool { return c >= 0 })
	}
	return false, known
}

// fuseConnectionsIn lists the /dev/fuse descriptors of the task whose /proc folder is dir.
func fuseConnectionsIn(dir string) ([]int64, error) {
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/fd/" + fd.Name())
		if err != nil || !maybeFUSEDevice(target) {
			continue
		}
		info, err := os.ReadFile(dir + "/fdinfo/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		c := fuseConnection(string(info))
		if c < 0 && target != "/dev/fuse" {
			continue // a file named fuse, or a root: not a /dev/fuse descriptor (those have a connection)
		}
		out = append(out, c)
	}
	return out, nil
}

// liveThread is the /proc folder through which pid's descriptors show: its own, or, while it executes a new binary
// from a thread other than its first (Go's syscall.Exec, from any thread: a holder's upgrade), that thread's. Until
// such an exec ends, the kernel shows the first thread as a zombie with no descriptors (de_thread), and a mount its
// holder keeps looked unheld for a moment: a sessionfs mount then refused it as mounted already
// (TestMountUpgradeBackToBack, about one run in four). alive is false when every thread of pid ended or is killed:
// a process killed while a thread of it waits on a FUSE request its daemon read (the kernel waits those out) keeps
// its descriptors for good, and serves, holds or hands over nothing: a sessionfs mount waited 30 s for it, and
// failed, where it cleared the mount as stale before (TestHeldNotByAHolderKilledWhileAThreadWaitsOnTheMount).
func liveThread(pid int) (dir string, alive bool) {
	dir = fmt.Sprintf("/proc/%d", pid)
	if !Ended(dir) {
		return dir, true
	}
	tasks, _ := os.ReadDir(dir + "/task")
	for _, t := range tasks { // the first one too: the thread that executes takes its number as the exec ends
		if td := dir + "/task/" + t.Name(); !Ended(td) {
			return td, true
		}
	}
	return dir, false
}

// liveThreadDir is liveThread's folder: pid's own when nothing of it lives.
func LiveThreadDir(pid int) string {
	dir, _ := liveThread(pid)
	return dir
}

// procStat is the fields of the stat of the task whose /proc folder is dir, from field 3 (its state) on: the name
// before them may hold anything, ')' and spaces too. nil when the task is gone.
func ProcStat(dir string) []string {
	stat, err := os.ReadFile(dir + "/stat")
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// ended says whether the task of /proc folder dir is gone, has exited, or is killed (endedFields).
func Ended(dir string) bool { return endedFields(ProcStat(dir)) }

// endedFields says, from the fields of a task's /proc stat after its name (from field 3, the state), whether it
// exited (state Z, or X) or is killed: SIGKILL pending (field 31, the task's own pending signals), which a task in
// an exec never has (de_thread kills the other threads).
func endedFields(f []string) bool {
	if len(f) < 29 || f[0] == "Z" || f[0] == "X" {
		return true
	}
	pending, err := strconv.ParseUint(f[28], 10, 64)
	return err != nil || pending&(1<<(unix.SIGKILL-1)) != 0
}

// maybeFUSEDevice says whether a descriptor's link text may be /dev/fuse's: "/dev/fuse", or, opened in a mount
// namespace that ended since (a plugin pod's before a DaemonSet update, whose holder handed it over), the path
// beneath the detached mount it was opened through: "/fuse" beneath a /dev, "/" for /dev/fuse bound alone.
func maybeFUSEDevice(target string) bool {
	return target == "/dev/fuse" || target == "/" || strings.HasSuffix(target, "/fuse")
}

// fuseConnection reads fuse_connection from a /dev/fuse descriptor's fdinfo (-1 when it is not there).
func fuseConnection(fdinfo string) int64 {
	for _, l := range strings.Split(fdinfo, "\n") {
		if v, ok := strings.CutPrefix(l, "fuse_connection:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				return int64(n)
			}
		}
	}
	return -1
}

// kernelDev is a device number as the kernel writes it in fdinfo (its own dev_t: 12 bits of major above 20 of
// minor), not as stat encodes it.
func KernelDev(major, minor uint32) uint64 { return uint64(major)<<20 | uint64(minor) }

// holdsHelperCaps says whether pid holds CAP_SYS_PTRACE, as a mount's privileged helper does (confine.HelperKeep)
// and its confined daemon never does (confine drops it from the daemon's bounding set before it serves).
func HoldsHelperCaps(pid int) bool {
	status, err := os.ReadFile(LiveThreadDir(pid) + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_PTRACE) != 0
		}
	}
	return false
}

// mountOwner is the user_id a FUSE mount's options name (0 when none does: only root mounts without one).
func MountOwner(opts string) uint32 {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "user_id="); ok {
			if uid, err := strconv.ParseUint(v, 10, 32); err == nil {
				return uint32(uid)
			}
		}
	}
	return 0
}

// FSType is the filesystem type sessionfs mounts show in /proc/self/mountinfo ("fuse." + Name).
const FSType = "fuse.sessionfs"

// usersHolder tells, of a normal user's mount (vfsOptions, the mount table's: user_id= its owner), that user's
// holder: a process of that user started as the helper. No capability tells it from its daemon, and no privilege
// separates the two (both are that user's), so its command line does. A root mount's never is one: there the
// helper's capabilities tell it, not a command line a subverted daemon could give itself.
func UsersHolder(vfsOptions string) func(pid int) bool {
	owner := MountOwner(vfsOptions) // find.go; 0 (root) when none is named
	return func(pid int) bool {
		if owner == 0 {
			return false
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t%d\t%d\t%d\n", owner, owner, owner, owner)) {
			return false
		}
		args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return false
		}
		argv := strings.Split(string(args), "\x00")
		return selfexec.Is(argv, selfexec.Helper)
	}
}

// isUsersHolder says whether pid is some normal user's holder: a process of a user other than root started as the
// helper (doctor's state file check, which also wants it to hold the mount's connection).
func IsUsersHolder(pid int) bool {
	dir := LiveThreadDir(pid) // a holder executing a new binary: through the thread that executes
	status, err := os.ReadFile(dir + "/status")
	if err != nil || !strings.Contains(string(status), "\nUid:\t") || strings.Contains(string(status), "\nUid:\t0\t") {
		return false
	}
	args, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return false
	}
	argv := strings.Split(string(args), "\x00")
	return selfexec.Is(argv, selfexec.Helper)
}

// startTicks is when process pid started, in clock ticks after boot (its /proc stat's field 22), whatever its
// state: a process executing a new binary shows its first thread as a zombie for a moment, and keeps its start.
func StartTicks(pid int) (uint64, bool) {
	f := ProcStat(fmt.Sprintf("/proc/%d", pid))
	if len(f) < 20 {
		return 0, false
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	return ticks, err == nil
}

// processStart is when process pid started (from /proc: its start in clock ticks after boot, of 100 Hz, the
// kernel's USER_HZ on every architecture Linux runs Go on); false for a process gone, a zombie (a holder killed
// with its parent, both waiting to be reaped: a mount of a dead daemon is no hand-over to wait for), or one killed.
func ProcessStart(pid int) (time.Time, bool) {
	// A zombie has closed its descriptors: it holds nothing; a process killed holds them for good when a thread of
	// it waits on a FUSE request, but hands nothing over.
	if Ended(fmt.Sprintf("/proc/%d", pid)) {
		return time.Time{}, false
	}
	ticks, ok := StartTicks(pid)
	if !ok {
		return time.Time{}, false
	}
	system, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(system), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(boot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), err == nil
		}
	}
	return time.Time{}, false
}

// connectionOf is the FUSE connection of the sessionfs mount at mnt (its device minor), from the mount table.
func Connection(mnt string) (uint32, bool) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType != FSType {
		return 0, false
	}
	return uint32(mounts[len(mounts)-1].Minor), true
}

// Abort aborts FUSE connection minor through the fusectl filesystem (mounted first if need be).
func Abort(minor uint32) error {
	const ctl = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, fmt.Sprint(minor))); err != nil {
		// fusectl is not mounted here yet.
		if err := syscall.Mount("fusectl", ctl, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl to abort the connection: %w", err)
		}
	}
	abort := filepath.Join(ctl, fmt.Sprint(minor), "abort")
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort the connection: %w", err)
	}
	return nil
}

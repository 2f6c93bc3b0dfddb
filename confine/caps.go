package confine

import (
	"fmt"
	"slices"
	"strings"

	"kernel.org/pub/linux/libs/security/libcap/cap"
)

// Keep are the capabilities the serving process holds, each for a request it serves on the callers' behalf (the
// kernel checks the callers' own permissions first: the mount is default_permissions):
//   - SETUID, SETGID: a file is made with its caller's filesystem identity (setfsuid, setfsgid), so it gets the
//     caller's owner, a setgid folder's group, and the caller's refusals; seccomp allows only those two of the
//     calls these capabilities govern (no setuid, setresuid, setgroups);
//   - CHOWN: what the daemon makes on its own belongs to the session's owner, and chown requests;
//   - DAC_OVERRIDE: the store's files of every owner are opened and changed for the callers;
//   - FOWNER: chmod, utimes and xattrs of files the daemon's uid does not own;
//   - FSETID: a chmod keeps the setgid bit of a file whose group the daemon is not in;
//   - SYS_ADMIN: the kernel asks it to register a passthrough backing file (FUSE_DEV_IOC_BACKING_OPEN), and for
//     trusted.* xattrs. seccomp takes away what it would otherwise allow (mount, unshare, setns, bpf, ...).
//
// Everything else goes from every set, the bounding set included. SETFCAP going means a session cannot set file
// capabilities (security.capability) on a file in the store, which a host user could then run.
var Keep = []cap.Value{cap.CHOWN, cap.DAC_OVERRIDE, cap.FOWNER, cap.FSETID, cap.SETGID, cap.SETUID, cap.SYS_ADMIN}

// HelperKeep are the capabilities the privileged helper holds beyond Keep: SYS_PTRACE, to read which processes of
// every user keep the mount busy (their /proc/<pid>/fd), and SYS_NICE, to leave the idle scheduling class it is
// started in (mount/idle.go). The helper is started with what the bounding set holds
// (Bound), so it holds nothing else either.
var HelperKeep = []cap.Value{cap.SYS_PTRACE, cap.SYS_NICE}

// Bound shrinks the bounding set of every thread to Keep and HelperKeep, before the helper is started. It is
// early on purpose: each drop stops every thread of the process, and a busy process (its watcher starting, the
// helper's start-up competing for the cores) took four times as long as a quiet one (18-21 ms against 5 ms for
// the ~35 drops). Serving drops HelperKeep later.
func Bound(o Options) error {
	if o.Mode == Off {
		return nil
	}
	return dropBound(append(slices.Clone(Keep), HelperKeep...))
}

// dropBound drops from every thread's bounding set what it holds beyond keep. It needs SETPCAP.
func dropBound(keep []cap.Value) error {
	for v := cap.Value(0); v < cap.MaxBits(); v++ {
		if slices.Contains(keep, v) {
			continue
		}
		if on, err := cap.GetBound(v); err != nil || !on {
			continue
		}
		if err := cap.DropBound(v); err != nil {
			return fmt.Errorf("drop %s from the bounding set: %w", v, err)
		}
	}
	return nil
}

// dropCaps leaves the process (every thread) with Keep, effective and permitted, and nothing in its inheritable,
// ambient and bounding sets: nothing it could exec (seccomp refuses execve too) would get more. last, if set, runs
// just before the capabilities go.
func dropCaps(last func()) error {
	// The bounding set needs SETPCAP to shrink: first, while the process still has it. After Bound, only
	// HelperKeep is left to drop.
	if err := dropBound(Keep); err != nil && !startedByHelper() {
		return err
	}
	if err := cap.ResetAmbient(); err != nil {
		return fmt.Errorf("clear the ambient set: %w", err)
	}
	if last != nil {
		last()
	}
	cur, set := cap.GetProc(), cap.NewSet()
	for _, v := range Keep {
		if on, _ := cur.GetFlag(cap.Permitted, v); !on {
			continue // not held to begin with (a container's root): nothing to keep
		}
		if err := set.SetFlag(cap.Permitted, true, v); err != nil {
			return err
		}
		if err := set.SetFlag(cap.Effective, true, v); err != nil {
			return err
		}
	}
	if err := set.SetProc(); err != nil {
		return fmt.Errorf("set the capabilities %s: %w", set, err)
	}
	return nil
}

// Held names the effective capabilities of the process pid reads from /proc ("" for none).
func Held(pid int) (string, error) {
	s, err := cap.GetPID(pid)
	if err != nil {
		return "", err
	}
	var names []string
	for v := cap.Value(0); v < cap.MaxBits(); v++ {
		if on, _ := s.GetFlag(cap.Effective, v); on {
			names = append(names, strings.ToUpper(v.String()))
		}
	}
	return strings.Join(names, " "), nil
}

// startedByHelper: this process holds no SETPCAP, and its bounding set nothing beyond Keep and HelperKeep: it was
// started by a mount's helper (a daemon taking a connection over, package mount/takeover), whose bounding set Bound
// left so. HelperKeep then stays in the bounding set, which matters only to what the process could exec, and
// seccomp refuses execve.
func startedByHelper() bool {
	if on, err := cap.GetProc().GetFlag(cap.Effective, cap.SETPCAP); err != nil || on {
		return false
	}
	for v := cap.Value(0); v < cap.MaxBits(); v++ {
		if on, err := cap.GetBound(v); err == nil && on && !slices.Contains(Keep, v) && !slices.Contains(HelperKeep, v) {
			return false
		}
	}
	return true
}

//go:build faultinject

package nodes

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// FaultPrefix starts the names the fault-injection build answers in sessions/ (never a valid session id).
const FaultPrefix = ".sessionfs-fault-"

// fault is the slip the confinement must contain, on request, from inside the serving process: a lookup of
// sessions/.sessionfs-fault-<op>=<url-escaped absolute path> makes the daemon's own code use a host path by name,
// not beneath the store's descriptor. op is read (open for reading), write (create a file), mount (a tmpfs over
// the path) or unshare (a new mount namespace; the path is unused). The lookup fails with the kernel's errno;
// EEXIST stands for "it worked". Only the test build (-tags faultinject) has it.
//
// op hostile-<id> makes the daemon lie, as a compromised one would: session id is answered from then on as a
// symlink to the path (hostileLink), and the kernel is told to forget its name (invalidate), so the next walk
// through sessions/<id> meets the link. What walks the mount with privilege (the helper) must not follow it.
//
// op turncoat-<id> is the same lie told late: the next lookup of session id is answered truly, then the kernel is
// told to forget the name and the link is answered from then on. What checked the folder by path, then handed the
// path on, hands on the lie.
//
// op die kills the daemon (SIGKILL, as the kernel's OOM killer ends one over its cgroup's memory), each daemon
// each time: the request the kernel resends to the daemon that takes over kills that one too.
func fault(name string, invalidate func(id string)) (syscall.Errno, bool) {
	rest, ok := strings.CutPrefix(name, FaultPrefix)
	if !ok {
		return 0, false
	}
	if rest == "die" {
		_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGKILL) // tgkill: the confinement allows it (Go preempts with it), not kill
		select {}                                                 // the signal is on its way
	}
	op, escaped, _ := strings.Cut(rest, "=")
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return syscall.EINVAL, true
	}
	if id, ok := strings.CutPrefix(op, "turncoat-"); ok {
		hostileMu.Lock()
		turncoat[id] = path
		hostileMu.Unlock()
		go invalidate(id) // so the next walk looks it up
		return syscall.EEXIST, true
	}
	if id, ok := strings.CutPrefix(op, "hostile-"); ok {
		hostileMu.Lock()
		hostile[id] = path
		hostileMu.Unlock()
		go invalidate(id) // the kernel holds the folder's lock until this lookup is answered
		return syscall.EEXIST, true
	}
	switch op {
	case "read":
		var f *os.File
		if f, err = os.Open(path); err == nil {
			f.Close()
		}
	case "write":
		var f *os.File
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		}
	case "mount":
		err = unix.Mount("tmpfs", path, "tmpfs", 0, "")
	case "unshare":
		err = unix.Unshare(unix.CLONE_NEWNS)
	default:
		return syscall.EINVAL, true
	}
	var errno syscall.Errno
	switch {
	case err == nil:
		return syscall.EEXIST, true
	case errors.As(err, &errno):
		return errno, true
	}
	return syscall.EIO, true
}

var (
	hostileMu sync.Mutex
	hostile   = map[string]string{} // session id -> the link the daemon answers for it
	turncoat  = map[string]string{} // session id -> the link the daemon answers after one true answer
)

func hostileLink(id string, invalidate func(id string)) (string, bool) {
	hostileMu.Lock()
	defer hostileMu.Unlock()
	if target, ok := turncoat[id]; ok {
		delete(turncoat, id)
		hostile[id] = target
		go invalidate(id) // once this true answer is in (the kernel holds the folder's lock until then)
		return "", false
	}
	target, ok := hostile[id]
	return target, ok
}

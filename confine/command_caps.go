package confine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The securebits a command runs with when the helper may set them (it holds SETPCAP: root): root's exec gains no
// capability (NOROOT), none can be made ambient, and neither can be undone.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
	commandSecurebits             = secbitNoRoot | secbitNoRootLocked | secbitKeepCapsLocked | secbitNoCapAmbientRaise |
		secbitNoCapAmbientRaiseLocked
)

// dropAllCaps leaves the calling thread (about to exec the command) with no capability in any set: effective,
// permitted, inheritable, ambient, and the bounding set, so that root's exec gains none back (the kernel gives
// root's programs the bounding set). Emptying the bounding set needs SETPCAP: a process without it (a normal
// user) holds no capability to begin with and no_new_privs keeps file capabilities from adding any; as root
// without it, the command is refused. This thread's alone: the raw calls, not libcap's all-threads ones.
func dropAllCaps() error {
	setpcap, err := holds(unix.CAP_SETPCAP)
	if err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	if setpcap {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, commandSecurebits, 0, 0, 0); err != nil {
			return fmt.Errorf("set the securebits: %w", err)
		}
		for v := 0; ; v++ {
			on, err := inBound(v)
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			if err != nil {
				return fmt.Errorf("read the bounding set: %w", err)
			}
			if on {
				if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(v), 0, 0, 0); err != nil {
					return fmt.Errorf("drop capability %d from the bounding set: %w", v, err)
				}
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("drop the capabilities: %w", err)
	}
	return checkNoCaps()
}

// checkNoCaps verifies what dropAllCaps promised: nothing held, and for root an empty bounding set.
func checkNoCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var got [2]unix.CapUserData
	if err := unix.Capget(&hdr, &got[0]); err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	for _, d := range got {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("a capability is still held after dropping them all")
		}
	}
	if unix.Geteuid() != 0 && unix.Getuid() != 0 {
		return nil
	}
	for v := 0; ; v++ {
		on, err := inBound(v)
		if errors.Is(err, unix.EINVAL) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the bounding set: %w", err)
		}
		if on {
			return errors.New("as root without CAP_SETPCAP the bounding set cannot be emptied, and the command would get it back at exec: refusing to run")
		}
	}
}

// holds reports whether the calling thread has capability v effective.
func holds(v int) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if err := unix.Capget(&hdr, &d[0]); err != nil {
		return false, err
	}
	return d[v/32].Effective&(1<<(v%32)) != 0, nil
}

// inBound reports whether capability v is in the calling thread's bounding set (EINVAL: no such capability).
func inBound(v int) (bool, error) {
	on, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(v), 0, 0, 0)
	return on == 1, err
}

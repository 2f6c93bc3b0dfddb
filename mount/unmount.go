package mount

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
)

// ErrBusy is returned (wrapped) by Unmount when the mount was busy and was detached lazily: it is gone from the
// namespace now, and the kernel finishes when the last process using it leaves.
var ErrBusy = errors.New("detached lazily; the kernel finishes when the last process using it leaves")

// Unmount detaches the sessionfs (or stale) mount at mountpoint, as root with umount(2), otherwise with
// fusermount3. Any other filesystem mounted there is refused.
func Unmount(mountpoint string) error {
	mnt, err := filepath.Abs(mountpoint)
	if err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 {
		if _, err := os.Stat(mnt); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return fmt.Errorf("%s is not mounted", mnt)
	}
	if top := mounts[len(mounts)-1]; top.FSType != FSType {
		return fmt.Errorf("%s is a %s mount, not a sessionfs one: not unmounting it", mnt, top.FSType)
	}
	if err := probe(mnt); isStale(err) {
		return forceUnmount(mnt, err)
	}
	if os.Geteuid() == 0 {
		// The daemon detaches its binds as it stops; a mount with binds on it is busy, so they go first.
		DetachBinds(mnt)
		if syscall.Unmount(mnt, 0) == nil {
			return nil
		}
	} else if exec.Command("fusermount3", "-u", mnt).Run() == nil {
		return nil
	}
	// Busy (a shell's cwd is inside): detach now, the kernel finishes when the last user leaves. Who keeps it
	// busy is read first: once detached, their folders no longer lie beneath mnt.
	users := Users(mnt)
	if err := forceUnmount(mnt, nil); err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%s is busy (in use by %s): %w", mnt, strings.Join(users, ", "), ErrBusy)
	}
	return fmt.Errorf("%s is busy: %w", mnt, ErrBusy)
}

// forceUnmount lazily detaches mnt, aborting its connection first when probed reports it hung.
func forceUnmount(mnt string, probed error) error {
	if errors.Is(probed, errHung) {
		if err := abortConnection(mnt); err != nil {
			return err
		}
	}
	if os.Geteuid() == 0 {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
		return nil
	}
	if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("fusermount3 -u -z %s: %v: %s", mnt, err, out)
	}
	return nil
}

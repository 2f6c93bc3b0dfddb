package bind

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Terminals mounts a new devpts instance of its own onto the folder open at place (a sandboxed run's /dev/pts,
// in its private mount namespace), as bubblewrap's --dev does: what lies beneath place then shows only the
// terminals opened after, through place's ptmx or the /dev/ptmx beside it (the kernel finds the instance at the
// "pts" next to the ptmx node opened), and no terminal of the host or of another login. Descriptors open on a
// terminal before (the caller's stdin, /dev/tty) keep working: a terminal is reached through its instance only
// when opened by name. The mount is nosuid and noexec, and honours devices (its terminals are devices).
func Terminals(place int) (*Mount, error) {
	fs, err := unix.Fsopen("devpts", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen devpts: %w", err)
	}
	defer unix.Close(fs)
	// newinstance is what every devpts mount is since Linux 4.7; said for the reader (and older kernels refuse).
	if err := unix.FsconfigSetFlag(fs, "newinstance"); err != nil {
		return nil, fmt.Errorf("devpts newinstance: %w", err)
	}
	// ptmx open to all (its owner is the namespace's), terminals the opener's, writable by its group (write(1)).
	for _, o := range [][2]string{{"ptmxmode", "0666"}, {"mode", "0620"}} {
		if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
			return nil, fmt.Errorf("devpts %s=%s: %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, fmt.Errorf("devpts: %w", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsmount devpts: %w", err)
	}
	id, err := mountID(mfd)
	if err != nil {
		unix.Close(mfd)
		return nil, err
	}
	t := &Tree{fd: mfd, id: id}
	return t.AttachTo(place)
}

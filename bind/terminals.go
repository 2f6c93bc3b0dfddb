package bind

import "golang.org/x/sys/unix"

// Terminals mounts a new devpts instance of its own onto the folder open at place (a sandboxed run's /dev/pts,
// in its private mount namespace), as bubblewrap's --dev does: what lies beneath place then shows only the
// terminals opened after, through place's ptmx or the /dev/ptmx beside it (the kernel finds the instance at the
// "pts" next to the ptmx node opened), and no terminal of the host or of another login. Descriptors open on a
// terminal before (the caller's stdin, /dev/tty) keep working: a terminal is reached through its instance only
// when opened by name. The mount is nosuid and noexec, and honours devices (its terminals are devices).
func Terminals(place int) (*Mount, error) {
	// newinstance is what every devpts mount is since Linux 4.7; said for the reader (and older kernels refuse).
	// ptmx open to all (its owner is the namespace's), terminals the opener's, writable by its group (write(1)).
	return mountNew("devpts", []string{"newinstance"}, [][2]string{{"ptmxmode", "0666"}, {"mode", "0620"}},
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, place)
}

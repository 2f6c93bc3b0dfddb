package e2e

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// childMounts counts the mounts made directly on the mount at mnt (a session's binds are), in one listmount(2):
// the kernel lists them under its mount lock, so the count is of one moment. /proc/self/mountinfo is read a page
// at a time, and a walk that binds one session and releases another between two pages shows both: more binds
// than were ever there at once. ok is false on a kernel without listmount (before 6.8).
func childMounts(t *testing.T, mnt string) (n int, ok bool) {
	t.Helper()
	var stx unix.Statx_t
	require.NoError(t, unix.Statx(unix.AT_FDCWD, mnt, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID_UNIQUE, &stx))
	if stx.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return 0, false
	}
	// struct mnt_id_req, version 0 (24 bytes).
	req := struct {
		size, spare  uint32
		mntID, param uint64
	}{size: 24, mntID: stx.Mnt_id}
	ids := make([]uint64, 1<<14)
	r, _, errno := unix.Syscall6(sysListmount, uintptr(unsafe.Pointer(&req)), uintptr(unsafe.Pointer(&ids[0])),
		uintptr(len(ids)), 0, 0, 0)
	if errno == unix.ENOSYS {
		return 0, false
	}
	require.Zero(t, errno, "listmount %s", mnt)
	return int(r), true
}

// sysListmount is listmount(2)'s number in the generic table (x86-64 and arm64 alike).
const sysListmount = 458

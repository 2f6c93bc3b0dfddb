package mount

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// A normal user's mount (fusermount3: no privileged helper) is held too: the daemon mounts through
// fusermount3 itself, keeping the /dev/fuse descriptor it hands back, and starts a holder (the helper's code,
// as this user, binding nothing) with copies of it and of the node log before it serves. The holder takes no
// input from sessions; it restarts the daemon as this user when it dies, and hands the mount to a new binary
// (takeover.Upgrade) as a root mount's does.

// fusermountFD mounts at mnt through fusermount3 with mo's options and returns the /dev/fuse descriptor it hands
// back (go-fuse's callFusermount, whose descriptor go-fuse would keep to itself).
func fusermountFD(mnt string, mo *fuse.MountOptions) (int, error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		return -1, errors.New("mounting as a normal user needs fusermount3 (apt-get install fuse3)")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	local, remote := os.NewFile(uintptr(fds[0]), "fusermount"), os.NewFile(uintptr(fds[1]), "fusermount-remote")
	defer local.Close()
	cmd := exec.Command(bin, mnt, "-o", strings.Join(fusermountOptions(mo), ","))
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{remote}
	err = cmd.Run()
	remote.Close()
	if err != nil {
		return -1, fmt.Errorf("fusermount3: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	conn, err := net.FileConn(local)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	buf, oob := make([]byte, 4), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.(*net.UnixConn).ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, fmt.Errorf("fusermount3 handed no descriptor back: %w", err)
	}
	got := selfexec.ReceivedFDs(oob[:oobn])
	if len(got) != 1 {
		for _, fd := range got {
			unix.Close(fd)
		}
		return -1, errors.New("fusermount3 handed no descriptor back")
	}
	unix.CloseOnExec(got[0])
	return got[0], nil
}

// fusermountOptions are mo's options as fusermount3 takes them (go-fuse's optionsStrings).
func fusermountOptions(mo *fuse.MountOptions) []string {
	r := append([]string{}, mo.Options...)
	if mo.AllowOther {
		r = append(r, "allow_other")
	}
	r = append(r, "fsname="+mo.FsName, "subtype="+mo.Name, fmt.Sprintf("max_read=%d", mo.MaxWrite))
	for i, o := range r { // options are comma-separated, with backslash escapes
		r[i] = strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(o)
	}
	return r
}

// fusermountUnmount unmounts a normal user's mount (lazily: detached, served until its last user leaves).
func fusermountUnmount(mnt string, lazily bool) error {
	args := []string{"-u"}
	if lazily {
		args = append(args, "-z")
	}
	out, err := exec.Command("fusermount3", append(args, "--", mnt)...).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("busy")) {
			return fmt.Errorf("%s: %w", strings.TrimSpace(string(out)), syscall.EBUSY)
		}
		return fmt.Errorf("fusermount3 -u: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// unmountAs unmounts mnt as this process may: mount(2)'s umount as root, fusermount3 otherwise.
func unmountAs(mnt string, flags int) error {
	if os.Geteuid() == 0 {
		return syscall.Unmount(mnt, flags)
	}
	return fusermountUnmount(mnt, flags&syscall.MNT_DETACH != 0)
}

// mountHeld mounts a normal user's held mount through fusermount3, keeping its descriptor (the first daemon's
// openDevice, keep_held.go).
func (f *firstHeld) mountHeld(s *startup) error {
	dev, err := fusermountFD(s.mnt, &s.fuse.MountOptions)
	if err != nil {
		return mountError(s.mnt, err)
	}
	s.dev = dev
	s.onRollback(func() { unix.Close(dev); _ = fusermountUnmount(s.mnt, true) })
	return nil
}

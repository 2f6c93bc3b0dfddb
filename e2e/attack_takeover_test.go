package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// helperFakeHolder plays a mount's holder on HELPER_SOCK (made with its folder, open to all, before the real
// owner makes them): it answers "state" as a holder of HELPER_STORE would, "upgrade" as if a new daemon served,
// and prints what it was asked and how many descriptors came with it.
func helperFakeHolder() int {
	sock := os.Getenv("HELPER_SOCK")
	if err := os.Mkdir(filepath.Dir(sock), 0o777); err != nil && !os.IsExist(err) { // made before the user's mount
		fmt.Fprintln(os.Stderr, "fake holder:", err)
		return 1
	}
	_ = os.Chmod(filepath.Dir(sock), 0o777)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake holder:", err)
		return 1
	}
	_ = os.Chmod(sock, 0o777)
	fmt.Println("listening")
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return 1
		}
		buf, oob := make([]byte, 4096), make([]byte, 64)
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			c.Close()
			continue
		}
		fds := 0
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				got, _ := unix.ParseUnixRights(&m)
				fds += len(got)
			}
		}
		var req struct{ Ask string }
		_ = json.Unmarshal(buf[:n], &req)
		fmt.Printf("asked %s fds=%d\n", req.Ask, fds)
		switch req.Ask {
		case "state":
			_ = json.NewEncoder(c).Encode(map[string]any{"Store": os.Getenv("HELPER_STORE"), "Format": "1",
				"NodeLog": 2, "Version": "attacker", "Daemon": 1})
		case "upgrade":
			_ = json.NewEncoder(c).Encode(map[string]any{"Daemon": 1, "Version": "attacker"})
		}
		c.Close()
	}
}

// TestAttackUpgradeAsksAnotherUsersSocket: a normal user's control sockets are in $XDG_RUNTIME_DIR/sessionfs or,
// without it (sudo -u, cron, a container's shell), beneath its state folder (~/.local/state/sessionfs/run:
// TestAttackRound4ControlFolderPlanted); only a user with no folder of its own (here HOME is the sticky temporary
// folder, root's) has them in /tmp/sessionfs-UID, a name in a folder anyone may write in. Another local user (uid
// 65534) makes that folder first, with a socket named for the user's mount; the user runs sessionfs mount on its
// served mountpoint. It must not take the other user's socket for its holder: not send it its binary, nor believe
// its answer ("served by sessionfs attacker now", exit 0, while nothing was handed over).
func TestAttackUpgradeAsksAnotherUsersSocket(t *testing.T) {
	needUserMounts(t)
	const user = 1000
	base, err := os.MkdirTemp("/tmp", "sessionfs-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	// tmp stands for /tmp: a folder every user may write in, sticky.
	store, mnt, tmp := filepath.Join(base, "store"), filepath.Join(base, "mnt"), filepath.Join(base, "tmp")
	for _, d := range []string{base, store, mnt} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chmod(d, 0o755))
		require.NoError(t, os.Chown(d, user, user))
	}
	require.NoError(t, os.Mkdir(tmp, 0o777))
	require.NoError(t, os.Chmod(tmp, 0o1777))
	env := []string{"SESSIONFS_STORE=" + store, "HOME=" + tmp, "TMPDIR=" + tmp}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	// The other user makes the user's control folder first: the user's holder (mount/fusermount.go) then has none.
	planted := filepath.Join(tmp, "sessionfs-"+strconv.Itoa(user))
	require.NoError(t, os.Mkdir(planted, 0o777))
	require.NoError(t, os.Chmod(planted, 0o777))
	require.NoError(t, os.Chown(planted, 65534, 65534))
	asUser := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: user, Gid: user}}
	daemon := exec.Command(bin, "mount", mnt)
	daemon.Env, daemon.SysProcAttr = env, asUser
	log := &syncBuffer{}
	daemon.Stdout, daemon.Stderr = log, log
	require.NoError(t, daemon.Start())
	t.Cleanup(func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		if isFUSEMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	eventually(t, 10*time.Second, func() bool { return isFUSEMount(mnt) }, "the user's mount did not come up: %s", log)
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	require.NoError(t, err)
	require.NotEmpty(t, mounts)
	sock := filepath.Join(tmp, "sessionfs-"+strconv.Itoa(user), fmt.Sprintf("mount-%d.sock", mounts[len(mounts)-1].Minor))

	fake := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=fake-holder", "HELPER_SOCK="+sock, "HELPER_STORE="+store)
	require.Equal(t, "listening", fake.line(t))
	again := exec.Command(bin, "mount", mnt)
	again.Env, again.SysProcAttr = env, asUser
	out, err := again.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	t.Logf("sessionfs mount (uid %d) on its served mountpoint, the other user's socket in place: exit %d: %s", user, code, strings.TrimSpace(string(out)))
	assert.NotContains(t, string(out), "attacker", "the user believed the other user's socket")
	assert.NotEqual(t, 0, code, "the mountpoint is served already: nothing was handed over")
	_ = fake.cmd.Process.Kill() // its lines so far, then its end
	var asked []string
	for fake.lines.Scan() {
		asked = append(asked, fake.lines.Text())
	}
	t.Logf("the other user's socket was asked: %q", asked)
	for _, l := range asked {
		assert.NotContains(t, l, "asked upgrade", "the user sent its binary to the other user's socket")
	}
}

// TestAttackUpgradeFromAnotherUser: another user on an --allow-other root mount (a container's uid, a person's
// shell as nobody) cannot make the holder, root, execute a binary of its own: the control socket's folder is
// root's alone, and sessionfs mount run as that user hands nothing over. The mount is served by the same daemon
// after.
func TestAttackUpgradeFromAnotherUser(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its holder")
	store := t.TempDir()
	require.NoError(t, os.Chmod(store, 0o755))
	ok(t, store, "new", "s1")
	m := mount(t, store, "--allow-other")
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	before, err := inspect.ServingPID(m.mnt)
	require.NoError(t, err)
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(m.mnt))
	require.NoError(t, err)
	require.NotEmpty(t, mounts)
	sock := fmt.Sprintf("/run/sessionfs/mount-%d.sock", mounts[len(mounts)-1].Minor)
	require.FileExists(t, sock, "the holder's control socket")

	a := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_ATTACK=connect", "ATTACK_STREAM="+sock)
	reached := a.line(t)
	t.Logf("uid 65534 dialing the holder's socket: %s", reached)
	assert.Contains(t, reached, "permission denied", "the socket's folder is root's alone")

	cmd := exec.Command(bin, "mount", m.mnt)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store, "HOME=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("sessionfs mount as uid 65534 on root's mount: %v: %s", err, strings.TrimSpace(string(out)))
	require.Error(t, err, "nothing is handed over")
	assert.NotContains(t, string(out), "is served by")
	after, err := inspect.ServingPID(m.mnt)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the same daemon serves")
	assert.NotContains(t, m.log.String(), "handing "+m.mnt+" over")
}

package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
)

// helperTouch sets the times of each folder in HELPER_PATH (colon-separated) again and again, as a session's own
// process may, until its stdin closes; it prints how many times it did.
func helperTouch() int {
	dirs := strings.Split(os.Getenv("HELPER_PATH"), ":")
	var stop atomic.Bool
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop.Store(true) }()
	fmt.Println("ready")
	n := 0
	for ; !stop.Load(); n++ {
		for _, d := range dirs {
			if err := unix.UtimesNano(d, nil); err != nil {
				fmt.Fprintln(os.Stderr, "touch:", err)
				return 1
			}
		}
	}
	fmt.Println(n)
	return 0
}

// TestAttackCSIPublishUnderTouches: a session's own process (uid 65534) sets the times of its folders (app,
// workspace, mcps, .claude) in the store as fast as it can, which overflows the daemon's queue of store events.
// Events lost, the daemon forgets what the kernel caches; the kernel detaches every mount on or beneath a name
// the daemon drops, in every namespace, and refuses a bind onto one (move_mount: ENOENT). A session's own writes
// must not take pods' folders off the disk nor fail a pod's start (TestMountUpgrade's takeover agents met the
// second): a pod of another session, s2, published before the attack keeps its binds of the store's folders, and
// every publish of s1 (its pod restarted) made under the attack succeeds, with its binds. Bound: 100 publishes
// or a minute.
func TestAttackCSIPublishUnderTouches(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	p := startCSI(t, store, "node-a")
	node, _ := p.client(t)
	s1 := giveSession(t, store, "s1")
	openUp(t, s1)
	var dirs []string
	for _, rel := range append(append([]string{}, bind.RunDirs...), ".claude") {
		dirs = append(dirs, filepath.Join(s1, rel))
	}
	publish := func(id, pod string) (string, error) {
		target := filepath.Join(p.kubelet, "pods", pod, "volumes", "session")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
		_, err := node.NodePublishVolume(rpcCtx(t), pvReq(id, target))
		return target, err
	}
	unpublish := func(id, target string) error {
		_, err := node.NodeUnpublishVolume(rpcCtx(t), &spec.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
		return err
	}
	running, err := publish("s2", "running")
	require.NoError(t, err)
	t.Cleanup(func() { _ = unpublish("s2", running) })
	require.Len(t, mountsUnder(t, filepath.Dir(running)), 1+len(bind.RunDirs), "s2's pod: the session and its heavy folders")

	cmd := exec.Command(exeForOthers(t))
	cmd.Env = append(os.Environ(), "SESSIONFS_E2E_HELPER=touch", "HELPER_PATH="+strings.Join(dirs, ":"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	stop := sync.OnceFunc(func() { _ = stdin.Close(); _ = cmd.Wait() })
	t.Cleanup(stop)
	eventually(t, 10*time.Second, func() bool { return strings.Contains(out.String(), "ready") }, "the toucher starts: %s", out)

	const maxTries = 100
	deadline := time.Now().Add(time.Minute)
	tries, failed, short := 0, []string{}, 0
	for tries < maxTries && time.Now().Before(deadline) {
		tries++
		target, err := publish("s1", "pod")
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		if len(mountsUnder(t, filepath.Dir(target))) != 1+len(bind.RunDirs) {
			short++
		}
		t.Cleanup(func() { _ = unpublish("s1", target) })
		require.NoError(t, unpublish("s1", target))
	}
	stop()
	require.NotContains(t, out.String(), "touch:", "the toucher ran")
	t.Logf("%d publishes while the session's own process set its folders' times (%s times each): %d failed, %d short of a bind", tries, lastCount(out.String()), len(failed), short)
	assert.Empty(t, failed, "a publish failed under the session's own touches")
	assert.Zero(t, short, "publishes missing a bind of the store's folders under the session's own touches")
	assert.Equal(t, maxTries, tries, "the publishes took over a minute")
	assert.Len(t, mountsUnder(t, filepath.Dir(running)), 1+len(bind.RunDirs), "s2's pod, published before the attack, keeps its binds")
}

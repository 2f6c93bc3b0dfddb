package takeover

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// A holder killed while a thread of it waits on a request of its mount that the daemon, killed too, had read (the
// binds' worker, the poll probe at start-up: errThreadOnMount) never ends: the kernel waits such a request out,
// for a killed thread too, and the holder's own descriptor keeps the connection up. Nothing will ever hand the mount
// over: held says no, so that sessionfs mount clears it as a stale mount (aborting the connection ends the wait, and
// the holder) instead of waiting handoverWait for a hand-over, and failing so at every try.
func TestHeldNotByAHolderKilledWhileAThreadWaitsOnTheMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE here needs root")
	}
	for _, thread := range []string{"other", "first"} {
		t.Run("stuck thread "+thread, func(t *testing.T) {
			mnt := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), stuckOnMountEnv+"="+thread, stuckOnMountEnv+"_MNT="+mnt)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			cmd.Stderr = os.Stderr
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n') // its daemon read the request, which waits
			require.NoError(t, err, "the child mounted and its thread waits on the mount")
			require.Equal(t, "read\n", line)
			minor, ok := inspect.Connection(mnt)
			require.True(t, ok)
			defer func() {
				_ = inspect.Abort(minor) // ends the wait, and the child with it
				_ = unix.Unmount(mnt, unix.MNT_DETACH)
				_ = cmd.Wait()
			}()
			writeHeld(minor, Held{Holder: cmd.Process.Pid})
			defer os.Remove(heldFile(minor))
			require.NoError(t, cmd.Process.Kill())
			// Killed: every thread but the one the kernel keeps waiting ends (the first one a zombie).
			left := map[string]int{"first": 1, "other": 2}[thread]
			waitFor(t, func() bool { return threads(cmd.Process.Pid) == left })
			holds, _ := inspect.HoldsConnection(cmd.Process.Pid, int64(inspect.KernelDev(0, minor)))
			assert.False(t, holds, "a killed process holds no connection to hand over")
			assert.False(t, held(mnt), "a mount whose holder was killed is no hand-over under way")
		})
	}
}

// threads counts the tasks of pid that have not exited (a first thread that did shows as a zombie).
func threads(pid int) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(tasks)
}

// waitFor waits for cond, up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed child's threads did not end")
		}
	}
}

const stuckOnMountEnv = "SESSIONFS_TEST_STUCK_ON_MOUNT"

// init is TestHeldNotByAHolderKilledWhileAThreadWaitsOnTheMount's child when the environment says so: it mounts a
// filesystem whose lookups of "stuck" are read and never answered, and looks one up from its first thread, or from
// another; it says "read" once its filesystem read the request.
func init() {
	which := os.Getenv(stuckOnMountEnv)
	if which == "" {
		return
	}
	mnt := os.Getenv(stuckOnMountEnv + "_MNT")
	fs := &neverAnswers{RawFileSystem: fuse.NewDefaultRawFileSystem()}
	srv, err := fuse.NewServer(fs, mnt, &fuse.MountOptions{Name: "sessionfs", FsName: "stuck", DirectMount: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mount:", err)
		os.Exit(1)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		fmt.Fprintln(os.Stderr, "mount:", err)
		os.Exit(1)
	}
	stuck := func() { _, _ = os.Stat(mnt + "/stuck") }
	if which == "first" {
		runtime.LockOSThread() // init runs on the first thread
		stuck()
	}
	other := make(chan bool)
	for {
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				other <- false
				return
			}
			other <- true
			stuck()
		}()
		if <-other {
			select {} // until the test kills this process
		}
	}
}

// neverAnswers reads a lookup of "stuck" and never answers it, as a daemon killed after it read a request.
type neverAnswers struct{ fuse.RawFileSystem }

func (n *neverAnswers) Lookup(_ <-chan struct{}, _ *fuse.InHeader, name string, _ *fuse.EntryOut) fuse.Status {
	if name != "stuck" {
		return fuse.ENOENT
	}
	fmt.Println("read")
	select {}
}

package mount

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A /dev/fuse descriptor's fdinfo names its connection by the kernel's own device number (12 bits of major above
// 20 of minor), which is what the mount table's major:minor is compared with.
func TestFuseConnectionOfFdinfo(t *testing.T) {
	assert.Equal(t, int64(39), fuseConnection("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t90\nfuse_connection:\t39\n"))
	assert.Equal(t, int64(-1), fuseConnection("pos:\t0\nflags:\t02100002\nmnt_id:\t24\n"), "a kernel before 6.16, or a descriptor not yet mounted")
	assert.Equal(t, int64(-1), fuseConnection("fuse_connection:\tx\n"))
	assert.Equal(t, uint64(39), kernelDev(0, 39))
	assert.Equal(t, uint64(1<<20|2), kernelDev(1, 2))
}

func TestServingPIDOfNoMount(t *testing.T) {
	_, err := ServingPID(t.TempDir())
	assert.ErrorContains(t, err, "is not in the mount table")
}

// A process executing a new binary from a thread other than its first (a holder's upgrade: Go's syscall.Exec runs
// on any thread) shows, until the exec ends, its first thread as a zombie with no descriptors. Its /dev/fuse
// descriptors are still found, through the thread that executes: before, the mount such a holder kept looked unheld
// for a moment, and a sessionfs mount refused it as mounted already (TestMountUpgradeBackToBack, about one run in
// four).
func TestFuseConnectionsThroughAnExec(t *testing.T) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("this user cannot open /dev/fuse: %v", err)
	}
	unix.Close(fd)
	const execs = 150
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecAgainChild$")
	cmd.Env = append(os.Environ(), execAgainEnv+"="+strconv.Itoa(execs))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { stdin.Close(); _ = cmd.Wait() }()

	lines := bufio.NewReader(stdout)
	_, err = lines.ReadString('\n') // it holds /dev/fuse from here on
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { _, _ = lines.ReadString('\n'); close(done) }()
	polls, unheld := 0, 0
	for {
		select {
		case <-done:
			t.Logf("%d execs, %d looks at the process's descriptors: %d without /dev/fuse", execs, polls, unheld)
			assert.Zero(t, unheld, "the process held /dev/fuse throughout")
			assert.Greater(t, polls, execs)
			return
		default:
		}
		if holds, _ := holdsConnection(cmd.Process.Pid, -1); !holds {
			unheld++
		}
		polls++
	}
}

const execAgainEnv = "SESSIONFS_TEST_EXEC_AGAIN"

// TestExecAgainChild is TestFuseConnectionsThroughAnExec's process: it opens /dev/fuse (kept across exec) and
// executes itself, from a thread other than its first, until its count ends; then it says so and waits for stdin
// to close.
func TestExecAgainChild(t *testing.T) {
	left, err := strconv.Atoi(os.Getenv(execAgainEnv))
	if err != nil {
		t.Skip("run by TestFuseConnectionsThroughAnExec")
	}
	if os.Getenv(execAgainEnv+"_FD") == "" {
		fd, err := unix.Open("/dev/fuse", unix.O_RDWR, 0) // no O_CLOEXEC: kept across each exec
		require.NoError(t, err)
		t.Setenv(execAgainEnv+"_FD", strconv.Itoa(fd))
		fmt.Println("open")
	}
	if left == 0 {
		fmt.Println("done")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	t.Setenv(execAgainEnv, strconv.Itoa(left-1))
	errs := make(chan error)
	for range 16 { // until a goroutine runs on a thread other than the first
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				errs <- nil
				return
			}
			errs <- syscall.Exec(os.Args[0], os.Args, os.Environ())
		}()
		require.NoError(t, <-errs)
	}
	t.Fatal("no goroutine ran on a thread other than the first")
}

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
			minor, ok := connectionOf(mnt)
			require.True(t, ok)
			defer func() {
				_ = abortMinor(minor) // ends the wait, and the child with it
				_ = unix.Unmount(mnt, unix.MNT_DETACH)
				_ = cmd.Wait()
			}()
			writeHeld(minor, Held{Holder: cmd.Process.Pid})
			defer os.Remove(heldFile(minor))
			require.NoError(t, cmd.Process.Kill())
			// Killed: every thread but the one the kernel keeps waiting ends (the first one a zombie).
			left := map[string]int{"first": 1, "other": 2}[thread]
			waitFor(t, func() bool { return threads(cmd.Process.Pid) == left })
			holds, _ := holdsConnection(cmd.Process.Pid, int64(kernelDev(0, minor)))
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

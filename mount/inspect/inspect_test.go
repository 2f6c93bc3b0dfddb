package inspect

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	assert.Equal(t, uint64(39), KernelDev(0, 39))
	assert.Equal(t, uint64(1<<20|2), KernelDev(1, 2))
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
		if holds, _ := HoldsConnection(cmd.Process.Pid, -1); !holds {
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

// held tells a holder mid-exec (its descriptors not shown) from a process that took the pid of a holder killed
// since by when each started: a process started after the holder's state file was written is not its holder.
func TestProcessStartIsAfterWhatWasWrittenBefore(t *testing.T) {
	before := time.Now().Add(-5 * time.Second)
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	started, ok := ProcessStart(cmd.Process.Pid)
	require.True(t, ok)
	assert.True(t, started.After(before.Add(time.Second)), "started %v, after %v", started, before)
	assert.WithinDuration(t, time.Now(), started, 3*time.Second, "the clock's reading (boot time in seconds)")
	self, ok := ProcessStart(os.Getpid())
	require.True(t, ok)
	assert.False(t, self.After(started), "this process started before its child")
}

// A zombie holds nothing: a holder killed with its daemon, neither reaped yet, is no hand-over under way (sessionfs
// mount on that dead mount waited for one, 1.2-1.9 s, until the zombies were reaped).
func TestProcessStartOfAZombieIsNone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Wait() })
	require.NoError(t, cmd.Process.Kill())
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		return err == nil && strings.Contains(string(stat), ") Z ")
	}, 10*time.Second, time.Millisecond, "the child is a zombie (not reaped)")
	_, ok := ProcessStart(cmd.Process.Pid)
	assert.False(t, ok)
}

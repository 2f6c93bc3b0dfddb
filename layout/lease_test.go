package layout

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestLeaseOneRunnerAtATime(t *testing.T) {
	s := newStore(t)
	since := time.Date(2026, 1, 2, 10, 2, 0, 0, time.Local)
	l, err := s.TryLease("web", Holder{Host: "h1", PID: 123, Since: since})
	require.NoError(t, err)

	_, err = s.TryLease("web", ThisProcess())
	require.ErrorIs(t, err, ErrRunning)
	var re *RunningError
	require.True(t, errors.As(err, &re))
	require.NotNil(t, re.Holder)
	assert.Equal(t, "h1", re.Holder.Host)
	assert.Equal(t, 123, re.Holder.PID)
	assert.Equal(t, "session web is running on host h1 (pid 123) since Jan 2 10:02", err.Error())

	other, err := s.TryLease("api", ThisProcess()) // another session is another lease
	require.NoError(t, err)
	require.NoError(t, other.Release())

	require.NoError(t, l.Release())
	b, err := os.ReadFile(filepath.Join(s.LocksDir(), "web.run"))
	require.NoError(t, err)
	assert.Empty(t, b, "a released lease names no runner")
	l, err = s.TryLease("web", ThisProcess())
	require.NoError(t, err)
	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "releasing twice is harmless")

	_, err = s.TryLease("../x", ThisProcess())
	assert.ErrorIs(t, err, ErrInvalidID)
}

func TestLeaseMessageToday(t *testing.T) {
	now := time.Now()
	err := &RunningError{ID: "web", Holder: &Holder{Host: "h1", PID: 7, Since: now}}
	assert.Equal(t, "session web is running on host h1 (pid 7) since "+now.Format("15:04"), err.Error())
}

// The lease dies with its holder: a runner killed with SIGKILL releases nothing itself.
func TestLeaseDiesWithItsProcess(t *testing.T) {
	s := newStore(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SESSIONFS_LEASE_HOLDER="+s.Root)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 3)
	_, err = out.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(buf))

	_, err = s.TryLease("web", ThisProcess())
	var re *RunningError
	require.True(t, errors.As(err, &re), "%v", err)
	require.NotNil(t, re.Holder)
	assert.Equal(t, cmd.Process.Pid, re.Holder.PID)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	l, err := s.TryLease("web", ThisProcess())
	require.NoError(t, err, "the lease of a killed runner is free")
	require.NoError(t, l.Release())
}

// TestMain is also the lease holder of TestLeaseDiesWithItsProcess, when the environment asks for it.
func TestMain(m *testing.M) {
	if root := os.Getenv("SESSIONFS_LEASE_HOLDER"); root != "" {
		s, err := OpenStore(root)
		if err == nil {
			_, err = s.TryLease("web", ThisProcess())
		}
		if err != nil {
			os.Stdout.WriteString(err.Error())
			os.Exit(1)
		}
		os.Stdout.WriteString("ok\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLeaseWait(t *testing.T) {
	s := newStore(t)
	l, err := s.TryLease("web", Holder{Host: "h1", PID: 1, Since: time.Now()})
	require.NoError(t, err)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l.Release()
	}()
	told := 0
	start := time.Now()
	l2, err := s.Lease(context.Background(), "web", ThisProcess(), true, 50*time.Millisecond, func(re *RunningError) {
		told++
		assert.Equal(t, "h1", re.Holder.Host)
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	assert.Equal(t, 1, told, "the holder is told once")

	// Without wait: refused at once. With wait and a context that ends: the wait ends with it.
	_, err = s.Lease(context.Background(), "web", ThisProcess(), false, time.Second, nil)
	assert.ErrorIs(t, err, ErrRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = s.Lease(ctx, "web", ThisProcess(), true, 50*time.Millisecond, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, l2.Release())
}

// A lease file that is not a plain file (someone with access to the store planted a link or a FIFO) is refused:
// never followed, never waited on.
func TestLeaseHostileFile(t *testing.T) {
	s := newStore(t)
	outside := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(s.LocksDir(), "link.run")))
	_, err := s.TryLease("link", ThisProcess())
	assert.ErrorIs(t, err, ErrDamaged)
	b, _ := os.ReadFile(outside)
	assert.Equal(t, "keep", string(b), "the link's target is untouched")

	require.NoError(t, unix.Mkfifo(filepath.Join(s.LocksDir(), "fifo.run"), 0o600))
	done := make(chan error, 1)
	go func() { _, err := s.TryLease("fifo", ThisProcess()); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrDamaged)
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO as the lease file hangs the runner")
	}

	// A damaged record costs the message its details, not the refusal.
	l, err := s.TryLease("web", ThisProcess())
	require.NoError(t, err)
	defer l.Release()
	require.NoError(t, os.WriteFile(filepath.Join(s.LocksDir(), "web.run"), []byte("{not json"), 0o600))
	_, err = s.TryLease("web", ThisProcess())
	assert.ErrorIs(t, err, ErrRunning)
	assert.Equal(t, "session web is running (another runner holds its lease)", err.Error())
}

package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	_ "modernc.org/sqlite"
)

// TestLocksReachTheStore: a lock taken through the mount's FUSE side (a session not bound yet, or beyond
// --max-binds) is a lock on the store's file, so it stops one taken through a bind or the store (the CLI merging
// an agent's database, a container given the store's folder), and the other way round. POSIX locks stay a
// process's own: its two descriptors share them, as SQLite's connections need.
func TestLocksReachTheStore(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--max-binds", "0")
	viaMount := filepath.Join(m.mnt, "sessions", "s1", "workspace", "f")
	viaStore := filepath.Join(store, "sessions", "s1", "workspace", "f")
	require.NoError(t, os.WriteFile(viaMount, []byte("data"), 0o644))

	open := func(p string) *os.File {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	// setlk takes (or drops) a POSIX lock of this process on the first byte, without waiting.
	setlk := func(f *os.File, typ int16) error {
		return unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 1})
	}
	// ofd takes an open-file lock: it conflicts with any other file's lock, this process's POSIX locks too.
	ofd := func(f *os.File, typ int16) error {
		return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &unix.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 1})
	}

	t.Run("posix", func(t *testing.T) {
		a, b := open(viaMount), open(viaMount)
		require.NoError(t, setlk(a, unix.F_WRLCK))
		require.NoError(t, setlk(b, unix.F_WRLCK), "the same process's second descriptor shares its lock")
		s := open(viaStore)
		assert.ErrorIs(t, ofd(s, unix.F_WRLCK), unix.EAGAIN, "the store's file is locked")
		lk := unix.Flock_t{Type: unix.F_WRLCK, Len: 1}
		require.NoError(t, unix.FcntlFlock(b.Fd(), unix.F_GETLK, &lk))
		assert.Equal(t, int16(unix.F_UNLCK), lk.Type, "no other process holds it")
		require.NoError(t, setlk(a, unix.F_UNLCK))
		require.NoError(t, ofd(s, unix.F_WRLCK))
		// And the other way: the store's lock stops the mount's.
		assert.ErrorIs(t, setlk(a, unix.F_RDLCK), unix.EAGAIN)
		lk = unix.Flock_t{Type: unix.F_RDLCK, Len: 1}
		require.NoError(t, unix.FcntlFlock(a.Fd(), unix.F_GETLK, &lk))
		assert.Equal(t, int16(unix.F_WRLCK), lk.Type, "GETLK names the store's lock")
		require.NoError(t, ofd(s, unix.F_UNLCK))
		require.NoError(t, setlk(a, unix.F_RDLCK))
	})

	t.Run("a close drops the locks", func(t *testing.T) {
		f := open(viaMount)
		require.NoError(t, setlk(f, unix.F_WRLCK))
		require.NoError(t, f.Close())
		s := open(viaStore)
		// The kernel tells the daemon of the close a moment after close(2) returns.
		require.Eventually(t, func() bool { return ofd(s, unix.F_WRLCK) == nil }, 5*time.Second, 10*time.Millisecond)
		require.NoError(t, ofd(s, unix.F_UNLCK))
	})

	t.Run("flock", func(t *testing.T) {
		f, s := open(viaMount), open(viaStore)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB))
		assert.ErrorIs(t, unix.Flock(int(s.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_UN))
		require.NoError(t, unix.Flock(int(s.Fd()), unix.LOCK_EX|unix.LOCK_NB))
		assert.ErrorIs(t, unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
		require.NoError(t, unix.Flock(int(s.Fd()), unix.LOCK_UN))
	})

	t.Run("waiters hold no thread and can be interrupted", func(t *testing.T) {
		// The store's file is locked; 40 flock(1) processes wait on it through the mount.
		s := open(viaStore)
		require.NoError(t, unix.Flock(int(s.Fd()), unix.LOCK_EX))
		pid := m.serverPID(t)
		before := threadCount(t, pid)
		type waiter struct {
			cmd  *exec.Cmd
			done chan error
		}
		var waiters []waiter
		for i := 0; i < 40; i++ {
			w := waiter{exec.Command("flock", "-x", viaMount, "-c", "true"), make(chan error, 1)}
			require.NoError(t, w.cmd.Start())
			go func() { w.done <- w.cmd.Wait() }()
			waiters = append(waiters, w)
		}
		t.Cleanup(func() {
			for _, w := range waiters {
				_ = w.cmd.Process.Kill()
			}
		})
		time.Sleep(500 * time.Millisecond)
		for _, w := range waiters {
			select {
			case err := <-w.done:
				t.Fatalf("a waiter ended while the store's file was locked: %v", err)
			default:
			}
		}
		assert.Less(t, threadCount(t, pid), before+10, "each waiter would hold a thread of the daemon")
		// Killed, they go; the mount serves on.
		for _, w := range waiters[:20] {
			require.NoError(t, w.cmd.Process.Kill())
			select {
			case <-w.done:
			case <-time.After(10 * time.Second):
				t.Fatal("a killed waiter did not end")
			}
		}
		_, err := os.ReadFile(viaMount)
		require.NoError(t, err)
		// Let go, the rest take the lock in turn and end.
		require.NoError(t, unix.Flock(int(s.Fd()), unix.LOCK_UN))
		for _, w := range waiters[20:] {
			select {
			case err := <-w.done:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("a waiter did not get the lock once it was free")
			}
		}
	})

	t.Run("sqlite with two connections", func(t *testing.T) {
		// Two connections of one process, each with its descriptor of the database: SQLite counts on POSIX
		// locks being the process's, not the descriptor's.
		p := filepath.Join(m.mnt, "sessions", "s1", "workspace", "db.sqlite")
		dbs := make([]*sql.DB, 2)
		for i := range dbs {
			db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(2000)")
			require.NoError(t, err)
			db.SetMaxOpenConns(1)
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := dbs[0].ExecContext(ctx, "CREATE TABLE t (n INTEGER)")
		require.NoError(t, err)
		for i := 0; i < 20; i++ {
			_, err := dbs[i%2].ExecContext(ctx, "INSERT INTO t VALUES (?)", i)
			require.NoError(t, err, "insert %d", i)
			var n int
			require.NoError(t, dbs[(i+1)%2].QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n))
			require.Equal(t, i+1, n)
		}
	})
}

// threadCount is how many threads process pid has.
func threadCount(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			var n int
			_, err := fmt.Sscan(strings.TrimSpace(v), &n)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no thread count for %d", pid)
	return 0
}

// TestReadOnlyExclusiveFlock: a reader through a read-only mount (as a read-only CSI publish is) asking for an
// exclusive flock holds a shared lock on the store's file: readers on the host are not locked out, and a writer
// there waits only as for any reader. Among the mount's read-only descriptors it stays exclusive, so
// `flock -x` through the mount still serialises.
func TestReadOnlyExclusiveFlock(t *testing.T) {
	need(t, os.Geteuid() == 0, "the reader runs as another uid: needs root")
	_, err := exec.LookPath("flock")
	need(t, err == nil, "flock(1) is missing (util-linux)")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	viaStore := filepath.Join(store, "sessions", "s1", "workspace", "f")
	require.NoError(t, os.WriteFile(viaStore, []byte("data"), 0o644))

	for _, mode := range []string{"read-only mount", "read-only descriptor"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--allow-other", "--max-binds", "0"}
			if mode == "read-only mount" {
				args = append(args, "--read-only")
			}
			m := mount(t, store, args...)
			openUp(t, m.mnt)
			viaMount := filepath.Join(m.session("s1"), "workspace", "f")
			// flock(1) opens its file read-only; it holds the lock until its stdin ends.
			reader := func() (io.WriteCloser, *bufio.Scanner) {
				cmd := exec.Command("flock", "-x", "-n", viaMount, "-c", "echo held; exec cat")
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
				return stdin, bufio.NewScanner(stdout)
			}
			stdin, out := reader()
			require.True(t, out.Scan(), "the reader got no lock")
			require.Equal(t, "held", out.Text())

			host, err := os.OpenFile(viaStore, os.O_RDWR, 0)
			require.NoError(t, err)
			defer host.Close()
			sh := unix.Flock(int(host.Fd()), unix.LOCK_SH|unix.LOCK_NB)
			t.Logf("a host reader's shared flock while the mount's reader holds an exclusive one: %v", errnoName(sh))
			assert.NoError(t, sh, "the mount's read-only reader locks the host's readers out")
			require.NoError(t, unix.Flock(int(host.Fd()), unix.LOCK_UN))
			assert.ErrorIs(t, unix.Flock(int(host.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK,
				"a writer waits for the reader, as for any reader's shared lock")

			second := exec.Command("flock", "-s", "-n", viaMount, "-c", "true")
			second.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var exit *exec.ExitError
			require.ErrorAs(t, second.Run(), &exit, "a second read-only descriptor of the mount got a flock beside the exclusive one")
			assert.Equal(t, 1, exit.ExitCode(), "flock -n fails with 1 when the lock is taken")

			stdin.Close()
			eventually(t, 10*time.Second, func() bool { return unix.Flock(int(host.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil },
				"the reader's lock stayed after it ended")
			require.NoError(t, unix.Flock(int(host.Fd()), unix.LOCK_UN))
		})
	}
}

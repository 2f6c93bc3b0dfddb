package opencode

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
)

// TestSwappedDatabase: a launch (Follow) updates the session's database in place, and the session's processes
// may swap it for a link between sessionfs's check and SQLite's open. An unprivileged process (uid 65534, the
// session's owner here) swaps it for a link to another database, again and again, while Follow runs as root:
// the other database must never change.
func TestSwappedDatabase(t *testing.T) {
	if dir := os.Getenv("SESSIONFS_SWAPPER"); dir != "" {
		swapper(dir)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root, to swap as another uid (CI runs as root)")
		}
		t.Skip("needs root, to swap as another uid")
	}
	sess, root := agentstest.OpenSession(t)
	p := seed(t, root)
	folder := filepath.Dir(p)
	require.NoError(t, os.Chown(folder, 65534, 65534))
	for d := filepath.Dir(folder); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755)) // test folders are 0700: the session's owner must reach its own
	}
	require.NoError(t, os.Chown(p, 65534, 65534))
	require.NoError(t, os.Link(p, filepath.Join(folder, "real")))
	victim := seed(t, t.TempDir())
	require.NoError(t, os.Symlink(victim, filepath.Join(folder, "link")))
	require.NoError(t, os.Lchown(filepath.Join(folder, "link"), 65534, 65534))

	// The test binary, where uid 65534 may run it.
	bin, err := os.MkdirTemp("", "sessionfs-swapper-")
	require.NoError(t, err)
	defer os.RemoveAll(bin)
	require.NoError(t, os.Chmod(bin, 0o755))
	exe := filepath.Join(bin, "swapper")
	self, err := os.ReadFile("/proc/self/exe")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, self, 0o755))
	cmd := exec.Command(exe, "-test.run=^TestSwappedDatabase$")
	cmd.Env = append(os.Environ(), "SESSIONFS_SWAPPER="+folder)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	// Under way: the link has been seen where the database goes.
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			break
		}
		require.Less(t, time.Since(start), 10*time.Second, "the swapper never swapped")
	}
	refused, reasons := 0, map[string]int{}
	for i := 0; i < 300; i++ {
		if err := Follow(sess, "/moved/by/the/attack"); err != nil {
			refused++
			reasons[err.Error()]++
		}
	}
	t.Logf("%d of 300 launches refused: %v", refused, reasons)
	db, err := sql.Open("sqlite", victim)
	require.NoError(t, err)
	defer db.Close()
	var moved int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM session WHERE directory = '/moved/by/the/attack'`).Scan(&moved))
	assert.Zero(t, moved, "a database outside the session was changed")
}

// swapper puts, in folder, a link to another database where the session's was, then the session's back, for ever.
func swapper(folder string) {
	db := filepath.Join(folder, path0)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_ = os.Link(filepath.Join(folder, "link"), filepath.Join(folder, "l.tmp"))
		_ = os.Rename(filepath.Join(folder, "l.tmp"), db)
		_ = os.Link(filepath.Join(folder, "real"), filepath.Join(folder, "r.tmp"))
		_ = os.Rename(filepath.Join(folder, "r.tmp"), db)
	}
}

const path0 = "opencode.db"

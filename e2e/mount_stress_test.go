package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestContainStress races, for STRESS_SECONDS (60 by default), an unprivileged attacker working through the
// mount in its session (renames, symlink swaps and rmdir across alias views against reads, writes, creates and
// listings in folders it holds open) and a second attacker on the store itself (as a container bound to the
// plain store would: the transcript folder and .claude swapped with symlinks out of the session, atomically).
// The host's secret folder and another session hold a marker. Must hold: the marker is never read or listed,
// nothing is written outside the session, and the daemon never hangs.
func TestContainStress(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	secs := 60
	if s, err := strconv.Atoi(os.Getenv("STRESS_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	marker := "TOPSECRET" + hex.EncodeToString(rnd[:])
	sessions := filepath.Join(store, "sessions")
	s1 := filepath.Join(sessions, "s1")

	// What must stay untouched: a root-only host folder, and another session (root-only too, so the kernel
	// itself refuses the attacker when it follows a link there; only a daemon escape would reach them).
	secret := t.TempDir()
	require.NoError(t, os.Chmod(secret, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "secret"), []byte(marker), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sessions, "s2", "workspace", "s2file"), []byte(marker), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(sessions, "s2"), 0o700))
	before := treeSnapshot(t, secret) + treeSnapshot(t, filepath.Join(sessions, "s2"))
	require.NoError(t, filepath.Walk(s1, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(p, 65534, 65534)
		}
		return err
	}))
	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt)
	exe := exeForOthers(t)

	// The store-side attacker's decoys: a link out in place of the transcript folder, and a whole .claude whose
	// transcript folder is one.
	canon := filepath.Join(s1, ".claude", "projects", "-session-workspace")
	require.NoError(t, os.Symlink(secret, canon+".link"))
	evil := filepath.Join(s1, ".claude-evil")
	require.NoError(t, os.MkdirAll(filepath.Join(evil, "projects"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(evil, "projects", "-session-workspace")))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a, b := canon, canon+".link"
			if i%2 == 1 {
				a, b = filepath.Join(s1, ".claude"), evil
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Logf("swap: %v", err)
			} else {
				spin(20 * time.Microsecond) // a sleep this short waits for the scheduler, here for milliseconds
				if !assert.NoError(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)) {
					return
				}
				swaps++
			}
			spin(20 * time.Microsecond)
		}
	}()

	targets := []string{secret, "../../../../s2/workspace", "../../s2/workspace", strings.Repeat("../", 16) + secret[1:]}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+30)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), "SESSIONFS_E2E_HELPER=stress", "HELPER_SESSION="+m.session("s1"),
		"HELPER_MARKER="+marker, "HELPER_TARGETS="+strings.Join(targets, ":"), "HELPER_SECONDS="+strconv.Itoa(secs))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	close(stop)
	wg.Wait()
	require.NoError(t, ctx.Err(), "the attacker did not finish within 30 s of its end: an operation hung in the daemon")
	require.NoError(t, err, errb.String())

	var rep stressReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	assert.Empty(t, rep.Leaks, "the marker of the host folder or of another session was seen")
	assert.Equal(t, before, treeSnapshot(t, secret)+treeSnapshot(t, filepath.Join(sessions, "s2")),
		"nothing outside the session was written")
	alive := make(chan error, 1)
	go func() { var st syscall.Statfs_t; alive <- syscall.Statfs(m.mnt, &st) }()
	select {
	case err := <-alive:
		require.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("the daemon does not answer after the attack")
	}
	_, err = os.ReadDir(filepath.Join(m.mnt, "sessions"))
	require.NoError(t, err)
	t.Logf("stress: %d s, %d operations by %d workers through the mount (%.0f/s), %d store-side swaps, 0 leaks; errnos %v",
		int(time.Since(start).Seconds()), rep.Ops, rep.Workers, float64(rep.Ops)/time.Since(start).Seconds(), swaps, rep.Errnos)
}

// spin waits d without giving up the thread.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// treeSnapshot is every name, type, size and content hash under dir, for "unchanged" checks.
func treeSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String() + " " + strconv.FormatInt(fi.Size(), 10))
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + hex.EncodeToString(data))
		}
		b.WriteString("\n")
		return nil
	}))
	return b.String()
}

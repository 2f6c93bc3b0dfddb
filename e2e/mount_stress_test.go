package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// stressReport is what the stress helper prints when it ends.
type stressReport struct {
	Ops     int64            `json:"ops"`
	Errnos  map[string]int64 `json:"errnos"`
	Leaks   []string         `json:"leaks"` // every sighting of the secret marker: must stay empty
	Workers int              `json:"workers"`
}

// helperStress is the attacker inside a session, run as an unprivileged uid through the mount: for
// HELPER_SECONDS it races renames, symlink swaps and rmdir across alias views against reads, writes, creates and
// listings, looking for the marker that only the host's secret folder (and another session) holds.
func helperStress() int {
	root, marker := os.Getenv("HELPER_SESSION"), os.Getenv("HELPER_MARKER")
	targets := strings.Split(os.Getenv("HELPER_TARGETS"), ":")
	secs, _ := strconv.Atoi(os.Getenv("HELPER_SECONDS"))
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	projects, ws := filepath.Join(root, ".claude", "projects"), filepath.Join(root, "workspace")

	var (
		ops   atomic.Int64
		mu    sync.Mutex
		errs  = map[string]int64{}
		leaks []string
	)
	note := func(err error) {
		ops.Add(1)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			mu.Lock()
			errs[errno.Error()]++
			mu.Unlock()
		}
	}
	check := func(where string, b []byte) {
		if bytes.Contains(b, []byte(marker)) {
			mu.Lock()
			leaks = append(leaks, where)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				f(i)
			}
		}()
	}
	// Swappers: a folder seen through one view becomes a symlink out of the session, or goes away.
	for w := 0; w < 3; w++ {
		w := w
		run(func(i int) {
			d := filepath.Join(projects, fmt.Sprintf("-S%d", w), "d")
			note(os.Mkdir(d, 0o777))
			note(os.Rename(d, d+".old"))
			note(os.Symlink(targets[i%len(targets)], d))
			time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
			note(os.Remove(d))
			note(os.Rename(d+".old", d))
			if i%5 == 0 {
				note(os.RemoveAll(d))
			}
		})
		run(func(i int) {
			x := filepath.Join(ws, fmt.Sprintf("x%d", w))
			note(os.Mkdir(x, 0o777))
			note(os.Rename(x, x+".old"))
			note(os.Symlink(targets[i%len(targets)], x))
			note(os.Remove(x))
			note(os.Rename(x+".old", x))
		})
	}
	// Users: each holds a folder of another view open, as a shell's cwd, and works in it and by path.
	for w := 0; w < 6; w++ {
		w := w
		run(func(i int) {
			var dir string
			if w%2 == 0 {
				dir = filepath.Join(projects, fmt.Sprintf("-R%d", w), "d") // the same folder as -S*/d
			} else {
				dir = filepath.Join(ws, fmt.Sprintf("x%d", w%3))
			}
			fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			note(err)
			if err != nil {
				return
			}
			defer unix.Close(fd)
			for k := 0; k < 8; k++ {
				stressRead(fd, "secret", note, check)
				stressRead(fd, "s2file", note, check)
				f, err := unix.Openat(fd, fmt.Sprintf("planted-%d", w), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
				note(err)
				if err == nil {
					unix.Write(f, []byte("planted"))
					unix.Close(f)
				}
				note(unix.Mkdirat(fd, fmt.Sprintf("pdir-%d", w), 0o755))
				note(unix.Unlinkat(fd, fmt.Sprintf("pdir-%d", w), unix.AT_REMOVEDIR))
				ents, err := os.ReadDir(fmt.Sprintf("/proc/self/fd/%d", fd))
				note(err)
				for _, e := range ents {
					check("listing of "+dir, []byte(e.Name()))
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "secret"))
			note(err)
			check("read by path "+dir, b)
		})
	}
	wg.Wait()
	out, _ := json.Marshal(stressReport{Ops: ops.Load(), Errnos: errs, Leaks: leaks, Workers: 12})
	fmt.Println(string(out))
	return 0
}

func stressRead(dirfd int, name string, note func(error), check func(string, []byte)) {
	f, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	note(err)
	if err != nil {
		return
	}
	defer unix.Close(f)
	buf := make([]byte, 256)
	n, err := unix.Read(f, buf)
	note(err)
	if n > 0 {
		check("read of "+name, buf[:n])
	}
}

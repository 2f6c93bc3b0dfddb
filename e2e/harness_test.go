package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/testsummary"
)

// bin is the sessionfs binary under test: $SESSIONFS_BIN (make e2e builds it), else built here.
var bin string

func TestMain(m *testing.M) {
	// Sessions the tests make never take this machine's own Claude settings (new seeds from $HOME's): the tests of
	// that seeding ask for it (SESSIONFS_NO_USER_SETTINGS=0).
	os.Setenv("SESSIONFS_NO_USER_SETTINGS", "1")
	// The approvals the tests record (sessionfs approve, a checked run's own changes) are kept in a folder of the
	// run's, never in this machine's user's.
	cfg, err := os.MkdirTemp("", "sessionfs-e2e-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Setenv("SESSIONFS_APPROVALS", cfg)
	code, err := run(m)
	os.RemoveAll(cfg)
	if rerr := removeImages(); rerr != nil {
		fmt.Fprintln(os.Stderr, "e2e:", rerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	reportSkips()
	os.Exit(code)
}

var (
	skipsMu sync.Mutex
	skips   []string
)

// reportSkips writes the tests skipped and why to $SESSIONFS_SKIPS (go test shows a passing package's output to
// no one; make test prints the file at the end), and to stderr.
func reportSkips() {
	skipsMu.Lock()
	defer skipsMu.Unlock()
	slices.Sort(skips)
	text := ""
	for _, s := range skips {
		text += s + "\n"
	}
	if p := os.Getenv("SESSIONFS_SKIPS"); p != "" {
		_ = os.WriteFile(p, []byte(text), 0o644)
	}
	if text != "" {
		fmt.Fprint(os.Stderr, "skipped e2e tests:\n"+text)
	}
}

func run(m *testing.M) (int, error) {
	bin = os.Getenv("SESSIONFS_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "sessionfs-e2e-bin-")
		if err != nil {
			return 1, err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "sessionfs")
		for _, args := range [][]string{{"-tags", "nobackends", "-o", bin}, {"-o", backendsOf(bin)}} { // as make build
			out, err := exec.Command("go", append(append([]string{"build"}, args...), "../cmd/sessionfs")...).CombinedOutput()
			if err != nil {
				return 1, fmt.Errorf("build sessionfs: %v\n%s", err, out)
			}
		}
	}
	// Past the -timeout (make e2e's 50m) Go's panic names only the running tests: testsummary says, shortly
	// before, which passed, failed, were skipped and never started.
	return testsummary.Run(m), nil
}

// backendsOf is the whole CLI beside sessionfs binary sfs: what it runs for run, resume, doctor, sync and csi.
func backendsOf(sfs string) string { return filepath.Join(filepath.Dir(sfs), "sessionfs-backends") }

// need fails the test under CI (CI=true), where every requirement must be met, and skips it elsewhere.
func need(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("requirement missing under CI: %s", why)
	}
	skipsMu.Lock()
	skips = append(skips, t.Name()+": "+why)
	skipsMu.Unlock()
	t.Skip("skipped: " + why)
}

func needFUSE(t *testing.T) {
	t.Helper()
	_, err := os.Stat("/dev/fuse")
	need(t, err == nil, "FUSE: /dev/fuse is missing")
	_, ferr := exec.LookPath("fusermount3")
	need(t, os.Geteuid() == 0 || ferr == nil, "FUSE: not root and no fusermount3 (apt-get install fuse3)")
}

// result is what one CLI call did.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the sessionfs binary with the store in env.
func cli(t *testing.T, store string, args ...string) result {
	t.Helper()
	return cliIn(t, store, "", nil, args...)
}

// cliStdin runs the CLI with stdin.
func cliStdin(t *testing.T, store string, stdin io.Reader, args ...string) result {
	t.Helper()
	return cliWith(t, store, "", nil, stdin, args...)
}

func cliIn(t *testing.T, store, dir string, env []string, args ...string) result {
	t.Helper()
	return cliWith(t, store, dir, env, nil, args...)
}

func cliWith(t *testing.T, store, dir string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SESSIONFS_STORE="+store), env...)
	cmd.Stdin = stdin
	return runResult(t, cmd)
}

// runResult runs cmd and returns its output and exit code; a command that could not run fails the test.
func runResult(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Minute // a process it started that keeps its output fails the test, never hangs it
	}
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return r
}

// startUntil starts cmd and waits for the first line of its stdout, which must be line: the command is running.
func startUntil(t *testing.T, cmd *exec.Cmd, line string) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	got, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, line, got)
}

// ok runs the CLI and requires success, returning stdout.
func ok(t *testing.T, store string, args ...string) string {
	t.Helper()
	r := cli(t, store, args...)
	require.Equal(t, 0, r.code, "sessionfs %v: %s", args, r.stderr)
	return r.stdout
}

// mounted is a running `sessionfs mount` daemon.
type mounted struct {
	store, mnt string
	bin        string // the binary (bin when empty)
	cmd        *exec.Cmd
	log        *syncBuffer
}

// syncBuffer is an output a test reads while the process still writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// mount starts the real daemon on a new mountpoint and waits until it serves. Cleanup stops it and makes sure
// nothing stays mounted, on failure too.
func mount(t *testing.T, store string, extra ...string) *mounted {
	t.Helper()
	return mountWith(t, "", store, extra...)
}

// mountWith is mount with another build of the binary (exe; bin when empty).
func mountWith(t *testing.T, exe, store string, extra ...string) *mounted {
	t.Helper()
	needFUSE(t)
	m := &mounted{store: store, mnt: filepath.Join(t.TempDir(), "mnt"), bin: exe, log: &syncBuffer{}}
	m.start(t, extra...)
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *mounted) start(t *testing.T, extra ...string) {
	t.Helper()
	exe := bin
	if m.bin != "" {
		exe = m.bin
	}
	m.cmd = exec.Command(exe, append([]string{"mount", m.mnt}, extra...)...)
	m.cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+m.store)
	m.log.Reset()
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	// The daemon's helper or holder writes to the same output and may outlive it: Wait returns at most this long
	// after the daemon ended (a holder left running once kept a test waiting for 21 minutes).
	m.cmd.WaitDelay = 10 * time.Second
	require.NoError(t, m.cmd.Start())
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// Serving, said once the daemon's start-up is over: a test that kills the daemon earlier would kill it in
		// the middle of go-fuse's poll probe of its own mount, which the kernel then waits on for ever.
		if strings.Contains(m.log.String(), "sessionfs: serving ") && isFUSEMount(m.mnt) && !staleMount(m.mnt) {
			return
		}
		if m.cmd.ProcessState != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.stop(t)
	t.Fatalf("mount did not come up: %s", m.log.String())
}

// kill ends the daemon with SIGKILL, as a crash would, leaving its mount stale: with every process holding its
// connection, its holder too, which would otherwise start a daemon that takes it over (mount_takeover_test.go
// kills the daemon alone).
func (m *mounted) kill(t *testing.T) {
	t.Helper()
	killConnection(t, m.mnt)
	_ = m.cmd.Process.Kill() // gone already, unless it served through a relayed copy
	_ = m.cmd.Wait()
}

func (m *mounted) stop(t *testing.T) {
	if m.cmd != nil && m.cmd.Process != nil && m.cmd.ProcessState == nil {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = m.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			<-done
		}
	}
	if isFUSEMount(m.mnt) || staleMount(m.mnt) {
		_ = syscall.Unmount(m.mnt, syscall.MNT_DETACH)
	}
}

// session is the mounted path of session id.
func (m *mounted) session(id string) string { return filepath.Join(m.mnt, "sessions", id) }

func isFUSEMount(p string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[1] == p && strings.HasPrefix(f[2], "fuse.sessionfs") {
			return true
		}
	}
	return false
}

func staleMount(p string) bool {
	var st syscall.Statfs_t
	return errors.Is(syscall.Statfs(p, &st), syscall.ENOTCONN)
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWatching waits until process pid watches with inotify (sessionfs watch has added its folders): its number
// of watches is at least one and the same over two looks. A loaded machine's slow start is not then a lost line.
func waitWatching(t *testing.T, pid int) {
	t.Helper()
	last := 0
	eventually(t, 20*time.Second, func() bool {
		n := inotifyWatches(t, pid)
		settled := n > 0 && n == last
		last = n
		return settled
	}, "process %d never watched with inotify", pid)
}

// gate is a file a test's command waits on: a run that must still be running while the test looks at it waits
// for the test to open the gate, not for a time a loaded machine may overrun. Cleanup opens it: nothing waits on.
type gate string

func newGate(t *testing.T) gate {
	g := gate(filepath.Join(t.TempDir(), "gate"))
	t.Cleanup(func() { _ = g.release() })
	return g
}

// wait is the shell command that waits until the gate is open.
func (g gate) wait() string { return "while [ ! -e " + string(g) + " ]; do sleep 0.05; done" }

func (g gate) open(t *testing.T) { require.NoError(t, g.release()) }

func (g gate) release() error { return os.WriteFile(string(g), nil, 0o644) }

// trashedSessions lists the sessions waiting in the store's trash (trash/transcripts, which always exists, holds
// removed transcripts, not sessions).
func trashedSessions(t *testing.T, store string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(store, "trash"))
	require.NoError(t, err)
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == "transcripts" })
}

func regexpQuote(s string) string {
	return strings.NewReplacer(`.`, `\.`, `+`, `\+`, `(`, `\(`, `)`, `\)`).Replace(s)
}

// within100ms fails unless cond holds within 100 ms, and logs how long it took.
func within100ms(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 100*time.Millisecond {
			t.Fatalf("%s: not visible through the mount within 100 ms", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("%s: visible after %v", what, time.Since(start).Round(time.Microsecond))
}

func missing(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// sh runs a shell command line as a user would type it.
func sh(t *testing.T, dir, line string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", line, out)
	return string(out)
}

// errnoName is the errno's name ("ENOLCK"), "ok" for none.
func errnoName(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

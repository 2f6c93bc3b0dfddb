package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// helperExchange exchanges HELPER_A and HELPER_B (renameat2 RENAME_EXCHANGE) until killed, and counts the swaps
// it made on stdout every 1,000.
func helperExchange() int {
	a, b := os.Getenv("HELPER_A"), os.Getenv("HELPER_B")
	for i := 1; ; i++ {
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			fmt.Fprintln(os.Stderr, "exchange:", err)
			return 1
		}
		if i%1000 == 0 {
			fmt.Println(i)
		}
	}
}

// startExchanger starts, as uid 65534, a process exchanging a and b until the test ends.
func startExchanger(t *testing.T, a, b string) {
	t.Helper()
	cmd := exec.Command(exeForOthers(t))
	cmd.Env = append(os.Environ(), "SESSIONFS_E2E_HELPER=exchange", "HELPER_A="+a, "HELPER_B="+b)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("the exchanger: %s swaps (its count every 1,000)", lastCount(out.String()))
	})
	eventually(t, 10*time.Second, func() bool { return strings.TrimSpace(out.String()) != "" }, "the exchanger swaps")
	require.NotContains(t, out.String(), "exchange:", "the exchanger runs")
}

// giveSession hands the session's folder in the store to uid 65534: its processes own their files.
func giveSession(t *testing.T, store, id string) string {
	t.Helper()
	s := filepath.Join(store, "sessions", id)
	require.NoError(t, filepath.Walk(s, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(p, 65534, 65534)
		}
		return err
	}))
	return s
}

// lastCount is the last line the exchanger printed.
func lastCount(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

const hostMarker = "host-secret-7c1e"

// hostSecret makes a root-only host folder holding one file, and returns the folder.
func hostSecret(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte(hostMarker+"\n"), 0o600))
	return dir
}

// assertSecretUntouched checks the host folder holds only its secret, unchanged.
func assertSecretUntouched(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"secret"}, names, "nothing was written into the host folder")
	b, err := os.ReadFile(filepath.Join(dir, "secret"))
	require.NoError(t, err)
	assert.Equal(t, hostMarker+"\n", string(b))
}

// hostMount mounts a tmpfs at dir holding a file, standing in for a mount of the host's.
func hostMount(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host-file"), []byte("host"), 0o600))
}

// hostile is a zstd-compressed tar made by hand, as an attacker would.
func hostile(t *testing.T, hdrs ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	require.NoError(t, err)
	tw := tar.NewWriter(zw)
	all := append([]tar.Header{{Name: "s1/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "s1/session.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}}, hdrs...)
	for i, h := range all {
		require.NoError(t, tw.WriteHeader(&h))
		switch {
		case i == 1:
			_, err = io.WriteString(tw, "{}")
		case h.Typeflag == tar.TypeReg:
			_, err = tw.Write(make([]byte, h.Size))
		}
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// assertNothingMountedIn checks no mount anywhere on the host, but those beneath except, is on, or shows, a place
// inside dirs.
func assertNothingMountedIn(t *testing.T, except string, dirs ...string) {
	t.Helper()
	for _, e := range mountsUnder(t, "") {
		if strings.HasPrefix(e.point, except+"/") {
			continue
		}
		for _, d := range dirs {
			assert.False(t, e.point == d || strings.HasPrefix(e.point, d+"/"), "%s is mounted on (shows %s)", e.point, e.root)
			assert.False(t, e.root == d || strings.HasPrefix(e.root, d+"/"), "%s shows %s", e.point, e.root)
		}
	}
}

// attacker is a helper process of the test binary run as uid 65534; its stdout is read line by line, and its
// end (stdin closed) is awaited at cleanup.
type attacker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func startAttacker(t *testing.T, exe string, env ...string) *attacker {
	t.Helper()
	return startAttackerAs(t, 65534, exe, env...)
}

// startAttackerAs is startAttacker run as uid (and gid) uid.
func startAttackerAs(t *testing.T, uid uint32, exe string, env ...string) *attacker {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	a := &attacker{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	t.Cleanup(a.stop)
	return a
}

// line is the attacker's next line of output.
func (a *attacker) line(t *testing.T) string {
	t.Helper()
	require.True(t, a.lines.Scan(), "the attacker ended early: %v", a.lines.Err())
	return a.lines.Text()
}

// stop ends the attacker: it lets go of its locks and descriptors as it exits.
func (a *attacker) stop() {
	if a.cmd.ProcessState != nil {
		return
	}
	a.stdin.Close()
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

// memoryStore is a store folder in /dev/shm when it is a tmpfs, else a temporary folder: the other session's work
// makes and removes files by the thousand, which on ext4 costs more the more were removed in the last minutes
// (its inode allocator skips them), and that would be measured with the rest.
func memoryStore(t *testing.T) string {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		return t.TempDir()
	}
	store, err := os.MkdirTemp("/dev/shm", "sessionfs-locks-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(store) })
	return store
}

// openUp lets other users reach p (t.TempDir makes 0700 folders), so what they meet is the mount's answer.
func openUp(t *testing.T, p string) {
	t.Helper()
	for d := filepath.Dir(p); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
}

// exeForOthers is a copy of the test binary that another uid may run.
func exeForOthers(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	openUp(t, dir+"/x")
	dst := filepath.Join(dir, "e2e-helper")
	in, err := os.Open(self)
	require.NoError(t, err)
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(f, in)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return dst
}

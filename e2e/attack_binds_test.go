package e2e

import (
	"fmt"
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
)

// The attacks on the one bind primitive (package bind): a session's process keeps exchanging one of its heavy
// folders with a symlink to a host folder while sessionfs binds that folder. Whatever wins the race, nothing of
// the session may show at the host folder, and the host folder's own files must stay where they are.

func init() {
	if os.Getenv("SESSIONFS_E2E_HELPER") == "exchange" {
		os.Exit(helperExchange())
	}
}

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

// TestAttackRunNamespaceSwap: `sessionfs exec` on a mount whose daemon binds nothing (--max-binds 0) binds the
// store's workspace over the mount's in the run's namespace. The session's process (uid 65534 on an --allow-other
// mount) exchanges workspace with a symlink to a host folder, through the mount, while root runs exec again and
// again. Before the one primitive, the bind's target was a path and mount(2) followed the link: the run saw the
// session's files at the host folder (its /etc, its /usr/bin).
func TestAttackRunNamespaceSwap(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the run binds in a namespace of its own, and the attacker is another uid")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	host := t.TempDir()
	require.NoError(t, os.Chmod(host, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-file"), []byte("host\n"), 0o644))
	s1 := giveSession(t, store, "s1")
	require.NoError(t, os.WriteFile(filepath.Join(s1, "workspace", "session-file"), []byte("session\n"), 0o644))
	require.NoError(t, os.Lchown(filepath.Join(s1, "workspace", "session-file"), 65534, 65534))
	require.NoError(t, os.Symlink(host, filepath.Join(s1, "ws-link")))
	require.NoError(t, os.Lchown(filepath.Join(s1, "ws-link"), 65534, 65534))
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	onMount := m.session("s1")
	startExchanger(t, filepath.Join(onMount, "workspace"), filepath.Join(onMount, "ws-link"))

	const maxTries = 400
	deadline := time.Now().Add(3 * time.Minute)
	tries, ran, refused := 0, 0, 0
	for tries < maxTries && time.Now().Before(deadline) {
		tries++
		r := cli(t, store, "exec", "s1", "--", "ls", host)
		if r.code == 0 {
			ran++
		} else {
			refused++
		}
		if strings.Contains(r.stdout, "session-file") {
			t.Fatalf("after %d runs: the session's workspace was bound over the host folder %s (the run listed %q)", tries, host, r.stdout)
		}
	}
	t.Logf("%d runs while the workspace was exchanged with a link to %s: %d ran, %d refused (a folder that was a link when bound); the session never showed at the host folder", tries, host, ran, refused)
	assert.Positive(t, ran, "some runs went ahead (the race is real, not a refusal of every run)")
	assert.Positive(t, refused, "some runs met the link (the exchanger raced them)")
	b, err := os.ReadFile(filepath.Join(host, "host-file"))
	require.NoError(t, err)
	assert.Equal(t, "host\n", string(b))
}

// lastCount is the last line the exchanger printed.
func lastCount(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

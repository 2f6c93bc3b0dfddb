package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The low findings of issue 49 (round 4), each run as the attacker would.

// TestAttackRound4TextViewSubagentPermissions (finding 8): a rendering of the text view shows its subagents'
// transcripts too, so it grants no more than every file it reads. uid 65534 on an --allow-other root mount is
// refused another session's 0600 subagent transcript in the store, then reads the conversation's rendering: it is
// refused that too (before: served 0444 from the 0644 main transcript, the subagent's text in it). A reader that
// opened the rendering while it held nothing private is refused the reads once a 0600 subagent appears.
func TestAttackRound4TextViewSubagentPermissions(t *testing.T) {
	need(t, os.Geteuid() == 0, "reads as uid 65534 on an --allow-other root mount")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const conv = "44444444-2222-3333-4444-555555555555"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	main := `{"type":"user","message":{"role":"user","content":"a public prompt"},"timestamp":"2026-12-01T02:00:00Z","sessionId":"` + conv + `","uuid":"u1"}` + "\n"
	secret := `{"type":"user","isSidechain":true,"agentId":"a1","message":{"role":"user","content":"the secret is tangerine"},"timestamp":"2026-12-01T02:00:01Z","sessionId":"` + conv + `","uuid":"u2"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(canon, conv+".jsonl"), []byte(main), 0o644))
	subs := filepath.Join(canon, conv, "subagents")
	require.NoError(t, os.MkdirAll(subs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(subs, "agent-a1.jsonl"), []byte(secret), 0o600))
	openUp(t, filepath.Join(store, "sessions"))
	m := mount(t, store, "--allow-other")
	openUp(t, m.mnt)
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	md := filepath.Join(m.mnt, "conversations", "s1", "claude", conv+".md")

	// root, the files' owner, reads the subagent in the rendering.
	b, err := os.ReadFile(md)
	require.NoError(t, err)
	require.Contains(t, string(b), "tangerine")

	// 65534 is refused the subagent's file, through the mount as in the store...
	out, err := asNobody("cat", filepath.Join(m.session("s1"), ".claude", "projects", "-session-workspace", conv, "subagents", "agent-a1.jsonl"))
	require.Error(t, err, "the store's own check let 65534 read a 0600 file: %s", out)
	// ...and so the rendering that shows it.
	out, err = asNobody("cat", md)
	st, _ := os.Stat(md)
	t.Logf("the rendering: %v; uid 65534's cat: %v: %d bytes", st.Mode(), err, len(out))
	assert.Error(t, err, "uid 65534 read a 0600 subagent through the text view")
	assert.NotContains(t, out, "tangerine", "uid 65534 read a 0600 subagent through the text view")
	assert.Zero(t, st.Mode().Perm()&0o004, "the rendering grants others what the subagent's file denies them")

	// A conversation with no private file stays readable to 65534; a reader that opened it then is refused the
	// reads once a 0600 subagent appears in it.
	const conv2 = "55555555-2222-3333-4444-555555555555"
	main2 := strings.ReplaceAll(main, conv, conv2)
	require.NoError(t, os.WriteFile(filepath.Join(canon, conv2+".jsonl"), []byte(main2), 0o644))
	md2 := filepath.Join(m.mnt, "conversations", "s1", "claude", conv2+".md")
	eventually(t, 5*time.Second, func() bool { _, err := os.Stat(md2); return err == nil }, "%s never showed", md2)
	reader := exec.Command("sh", "-c", `exec 3<"$1" || exit 1; echo opened; read go; cat <&3`, "sh", md2)
	reader.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, err := reader.StdinPipe()
	require.NoError(t, err)
	stdout, err := reader.StdoutPipe()
	require.NoError(t, err)
	var stderr syncBuffer
	reader.Stderr = &stderr
	require.NoError(t, reader.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "uid 65534 could not open a rendering of 0644 files: %s", stderr.String())
	require.Equal(t, "opened", lines.Text())
	subs2 := filepath.Join(canon, conv2, "subagents")
	require.NoError(t, os.MkdirAll(subs2, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(subs2, "agent-a2.jsonl"), []byte(strings.ReplaceAll(secret, conv, conv2)), 0o600))
	eventually(t, 5*time.Second, func() bool {
		b, err := os.ReadFile(md2)
		return err == nil && strings.Contains(string(b), "tangerine")
	}, "the subagent never showed in the rendering")
	_, err = stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	stdin.Close()
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	werr := reader.Wait()
	t.Logf("uid 65534 reading on a rendering it opened before the 0600 subagent: %v: %d bytes; %s", werr, rest.Len(), stderr.String())
	assert.NotContains(t, rest.String(), "tangerine", "a rendering opened before gave 65534 the 0600 subagent")
}

// TestAttackRound4LogsEscapes (finding 9): a session's run prints escape sequences (an OSC 52 clipboard write, an
// OSC 0 title, CSI 2J clearing the screen, a C1 CSI). sessionfs logs read on a terminal (a pty, as a person's)
// shows them as text, never sends them; --raw, and a pipe, pass the bytes as they are.
func TestAttackRound4LogsEscapes(t *testing.T) {
	_, err := os.Stat("/dev/ptmx")
	need(t, err == nil, "a pseudo-terminal (/dev/ptmx)")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "exec", "s1", "--", "sh", "-c", `printf 'before\033]52;c;cHduZWQ=\007\033]0;pwned\007\033[2J\302\23331m\tafter\n'`)
	onTerminal := func(args ...string) []byte {
		master, slave := openPty(t)
		defer master.Close()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		require.NoError(t, cmd.Start())
		slave.Close()
		var out bytes.Buffer
		_, _ = io.Copy(&out, master) // EIO once the last holder of the slave is gone
		require.NoError(t, cmd.Wait(), "%s", out.String())
		return out.Bytes()
	}
	sent := func(b []byte) []string {
		var seqs []string
		for _, s := range []string{"\x1b]52", "\x1b]0;", "\x1b[2J", "\u009b", "\x07"} {
			if bytes.Contains(b, []byte(s)) {
				seqs = append(seqs, strings.NewReplacer("\x1b", "ESC", "\x07", "BEL", "\u009b", "CSI(C1)").Replace(s))
			}
		}
		return seqs
	}
	out := onTerminal("logs", "s1")
	t.Logf("sessionfs logs on a terminal: %q; sequences sent: %v", out, sent(out))
	assert.Empty(t, sent(out), "sessionfs logs sent a run's escape sequences to the reader's terminal")
	assert.Contains(t, string(out), `before\x1b]52;c;cHduZWQ=\x07`, "shown as text")
	assert.Contains(t, string(out), "\tafter", "a tab kept")

	out = onTerminal("logs", "--raw", "s1")
	t.Logf("sessionfs logs --raw on a terminal: %q", out)
	assert.Len(t, sent(out), 5, "--raw passes the bytes as they are")

	piped := ok(t, store, "logs", "s1")
	assert.Equal(t, "before\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\u009b31m\tafter\n", piped, "a pipe gets the bytes as they are")
}

// TestAttackRound4ControlFolderPlanted (finding 10): a normal user with no XDG_RUNTIME_DIR (sudo -u, cron, ssh
// without a login session) had its mounts' control folder at $TMPDIR/sessionfs-UID, a name any user may make
// first. Another local user (uid 65534) makes it; the user mounts, then runs sessionfs mount on the served
// mountpoint to upgrade it. Before, the holder found the folder not the user's and kept no control socket, and
// every upgrade of that mount failed; now the folder is beneath the user's own state folder
// (~/.local/state/sessionfs/run, 0700), and the upgrade goes through.
func TestAttackRound4ControlFolderPlanted(t *testing.T) {
	needUserMounts(t)
	const user = 1000
	base, err := os.MkdirTemp("/tmp", "sessionfs-user-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	// tmp stands for /tmp: a folder every user may write in, sticky. base is the user's home.
	store, mnt, tmp := filepath.Join(base, "store"), filepath.Join(base, "mnt"), filepath.Join(base, "tmp")
	for _, d := range []string{base, store, mnt} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chmod(d, 0o755))
		require.NoError(t, os.Chown(d, user, user))
	}
	require.NoError(t, os.Mkdir(tmp, 0o777))
	require.NoError(t, os.Chmod(tmp, 0o1777))
	env := []string{"SESSIONFS_STORE=" + store, "HOME=" + base, "TMPDIR=" + tmp}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	// The other user makes the name first, as itself.
	planted := filepath.Join(tmp, "sessionfs-"+strconv.Itoa(user))
	plant := exec.Command("mkdir", "-m", "0777", planted)
	plant.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := plant.CombinedOutput()
	require.NoError(t, err, "uid 65534 plants %s: %s", planted, out)

	asUser := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: user, Gid: user}}
	daemon := exec.Command(bin, "mount", mnt)
	daemon.Env, daemon.SysProcAttr = env, asUser
	log := &syncBuffer{}
	daemon.Stdout, daemon.Stderr = log, log
	require.NoError(t, daemon.Start())
	t.Cleanup(func() {
		un := exec.Command(bin, "unmount", mnt)
		un.Env, un.SysProcAttr = env, asUser
		_, _ = un.CombinedOutput()
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		if isFUSEMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	eventually(t, 10*time.Second, func() bool { return isFUSEMount(mnt) }, "the user's mount did not come up: %s", log)

	start := time.Now()
	var code int
	for try := 0; ; try++ { // a mount just up may still be making its holder: ask as a person would, again
		again := exec.Command(bin, "mount", mnt)
		again.Env, again.SysProcAttr = env, asUser
		out, err = again.CombinedOutput()
		code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code == 0 || try == 4 {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("sessionfs mount (uid %d) to upgrade its mount, %s planted by uid 65534: exit %d after %s: %s", user, planted, code,
		time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	assert.Equal(t, 0, code, "the upgrade of the user's mount failed")
	assert.Contains(t, string(out), "is served by sessionfs", "the mount was not handed over")
	st, err := os.Lstat(filepath.Join(base, ".local", "state", "sessionfs", "run"))
	if assert.NoError(t, err, "the control folder beneath the user's home") {
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
		assert.Equal(t, uint32(user), st.Sys().(*syscall.Stat_t).Uid)
	}
	entries, _ := os.ReadDir(planted)
	assert.Empty(t, entries, "the user put something in the folder another user made")
}

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Attacks on the nodes a daemon taking a held mount over leaves for later (go-fuse's takeover_pending.go): each is
// restored when the kernel first names it, while the daemon serves every session.

// The test binary doubles as a session's process holding the deepest folder of a chain (SESSIONFS_E2E_DEEP).
func init() {
	if n := os.Getenv("SESSIONFS_E2E_DEEP"); n != "" {
		os.Exit(deepHolder(n))
	}
}

// deepHolder opens, in HELPER_DIR, the deepest folder of a chain of n (folderChain's d0, walked down from
// d<n-1>), says "held", and then for each line "xattr" says "started", reads an attribute of it (a request about
// its node: with every folder above it restored first, if left for later) and says "done <error>".
func deepHolder(arg string) int {
	n, err := strconv.Atoi(arg)
	fd := -1
	if err == nil {
		fd, err = unix.Open(filepath.Join(os.Getenv("HELPER_DIR"), fmt.Sprintf("d%d", n-1)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	for k := n - 2; err == nil && k >= 0; k-- {
		var next int
		next, err = unix.Openat(fd, fmt.Sprintf("d%d", k), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		fd = next
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println("started")
		_, err := unix.Fgetxattr(fd, "user.sessionfs-e2e", make([]byte, 64))
		fmt.Println("done", err)
	}
	return 0
}

// TestAttackRestoreLaterDeepChainOthersGoOn: uid 65534 on an --allow-other root mount makes a chain of 16,000
// folders in its session (each moved into one made after it) and holds the deepest open; another session's file
// is read after it (its nodes too are left for later by the takeover). After a kill -9 of the daemon, the attacker
// names the deepest folder: the daemon restores the 13,000 folders above it left for later, each by its store
// path (seconds, the attacker's request). Meanwhile the other session reads, writes and lists its files, many
// times, none waiting for the attacker's restore; the daemon is killed again in its midst and the next one takes
// over within the holder's bound; the attacker's request is resent and answered (not EIO), and once more after a
// third kill (the node log the lazy restores left is right: no node freed that the kernel holds).
func TestAttackRestoreLaterDeepChainOthersGoOn(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	const folders = 16000
	store := t.TempDir()
	attackerSessions(t, store, "a")
	ok(t, store, "new", "b")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	openUp(t, m.mnt)
	exe := exeForOthers(t)
	ws := filepath.Join(m.session("a"), "workspace")
	chain := startAttacker(t, exe, "SESSIONFS_E2E_CHAIN="+strconv.Itoa(folders), "HELPER_DIR="+ws)
	require.Equal(t, "made", chain.line(t))
	deep := startAttacker(t, exe, "SESSIONFS_E2E_DEEP="+strconv.Itoa(folders), "HELPER_DIR="+ws)
	require.Equal(t, "held", deep.line(t))
	bFile := filepath.Join(m.session("b"), "workspace", "f")
	require.NoError(t, os.WriteFile(bFile, []byte("b's"), 0o644))

	killServing(t, m)()
	restores := takeoverRestores(m.log.String())
	require.Len(t, restores, 1)
	t.Logf("the takeover: %d nodes restored before serving, %d left for when used", restores[0].before, restores[0].later)
	require.Greater(t, restores[0].later, folders/2, "the chain is left for later")

	lines := make(chan string, 4)
	go func() {
		for deep.lines.Scan() {
			lines <- deep.lines.Text()
		}
		close(lines)
	}()
	_, err := fmt.Fprintln(deep.stdin, "xattr")
	require.NoError(t, err)
	require.Equal(t, "started", <-lines)
	started := time.Now()

	// The other session's work, again and again while the attacker's restore goes on.
	rounds := 0
	var done string
	otherWork := func() {
		b, err := os.ReadFile(bFile)
		require.NoError(t, err, "another session's file")
		require.Equal(t, "b's", string(b))
		n := filepath.Join(m.session("b"), "workspace", fmt.Sprintf("n%d", rounds))
		require.NoError(t, os.WriteFile(n, []byte("new"), 0o644), "another session's new file")
		ents, err := os.ReadDir(filepath.Dir(bFile))
		require.NoError(t, err, "another session's folder")
		require.Len(t, ents, rounds+2)
		rounds++
	}
	for done == "" && rounds < 20 {
		otherWork()
		select {
		case done = <-lines:
		default:
		}
	}
	t.Logf("another session's work: %d rounds (a read, a write and a listing each) while the attacker's restore went on", rounds)
	assert.Empty(t, done, "the attacker's restore ended before another session's work did 20 rounds: that work may have waited for it")

	select {
	case done = <-lines:
	default:
		done = ""
	}
	t.Logf("the second kill, %s after the attacker's request began (answered already: %q)", time.Since(started).Round(time.Millisecond), done)
	killServing(t, m)() // in the midst of the attacker's restore
	otherWork()
	if done == "" {
		select {
		case done = <-lines:
		case <-time.After(3 * time.Minute): // a hang, not a speed
			t.Fatal("the attacker's request about its deepest folder is not answered after the second takeover")
		}
	}
	t.Logf("the attacker's request about its deepest folder, across the second takeover: %s, %s after it began", done, time.Since(started).Round(time.Millisecond))
	assert.NotContains(t, done, "input/output error")
	assert.NotContains(t, done, "stale")

	killServing(t, m)()
	_, err = fmt.Fprintln(deep.stdin, "xattr")
	require.NoError(t, err)
	require.Equal(t, "started", <-lines)
	select {
	case done = <-lines:
	case <-time.After(3 * time.Minute):
		t.Fatal("the attacker's request about its deepest folder is not answered after the third takeover")
	}
	t.Logf("after the third takeover: %s; restores: %+v", done, takeoverRestores(m.log.String()))
	assert.NotContains(t, done, "input/output error")
	assert.NotContains(t, done, "stale")
	otherWork()
	assert.NotContains(t, m.log.String(), "the connection is ended")
}

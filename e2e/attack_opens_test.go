package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// opensHeld is what the opens-fill helper reports once it can open no more.
type opensHeld struct {
	Opened int    `json:"opened"`
	Errno  string `json:"errno"` // why the next open failed
}

// helperOpensFill waits for a line on stdin (its limits are raised meanwhile), raises its soft RLIMIT_NOFILE to
// the hard one, opens HELPER_PATH read-only until an open fails, reports, and keeps everything open until its
// stdin ends.
func helperOpensFill() int {
	if _, err := os.Stdin.Read(make([]byte, 3)); err != nil {
		return 1
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
	rep := opensHeld{}
	for {
		if _, err := unix.Open(os.Getenv("HELPER_PATH"), unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			rep.Errno = errnoName(err)
			break
		}
		rep.Opened++
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// fillOpens starts the attacker on path with as many descriptors as the kernel lets a process have, and returns
// it (holding its opens) with its report.
func fillOpens(t *testing.T, exe, path string) (*attacker, opensHeld) {
	t.Helper()
	a := startAttacker(t, exe, "SESSIONFS_E2E_HELPER=opens-fill", "HELPER_PATH="+path)
	most, err := os.ReadFile("/proc/sys/fs/nr_open")
	require.NoError(t, err)
	n, err := strconv.ParseUint(strings.TrimSpace(string(most)), 10, 64)
	require.NoError(t, err)
	// Its own limit should not be what stops it, but the daemon's share. Without CAP_SYS_RESOURCE (some
	// containers) neither it nor the daemon can go past the hard limit they inherit: the daemon's share of it is
	// then still below what the attacker may open.
	lim := unix.Rlimit{Cur: n, Max: n}
	if err := unix.Prlimit(a.cmd.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		require.ErrorIs(t, err, unix.EPERM)
	}
	_, err = io.WriteString(a.stdin, "go\n")
	require.NoError(t, err)
	var rep opensHeld
	require.NoError(t, json.Unmarshal([]byte(a.line(t)), &rep))
	return a, rep
}

// openFDs is how many descriptors process pid has open.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	return len(fds)
}

// TestAttackOpensFillTheDaemon: uid 65534 opening a world-readable file of session v1 through the mount as often
// as it can (each open holds a descriptor of the store's file in the daemon) gets its share and EMFILE, never the
// daemon's whole table: meanwhile root opens and creates files of session v2 and of v1, a new session appears
// and can be read, and a change behind the mount still shows (the watcher). Once the attacker exits, its share
// is whole again.
func TestAttackOpensFillTheDaemon(t *testing.T) {
	need(t, os.Geteuid() == 0, "the attacker runs as another uid: needs root")
	store := memoryStore(t)
	ok(t, store, "new", "v1")
	ok(t, store, "new", "v2")
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	openUp(t, m.mnt)
	exe := exeForOthers(t)
	target := filepath.Join(m.session("v1"), "session.json")
	st, err := os.Stat(target)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&0o004, "session.json is world-readable")
	v2 := filepath.Join(m.session("v2"), "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(v2, "seen"), []byte("before"), 0o644))
	pid := m.serverPID(t)
	idle := openFDs(t, pid)

	a, rep := fillOpens(t, exe, target)
	t.Logf("uid 65534: %d opens of v1's session.json held, then %s; the daemon holds %d descriptors (%d idle)",
		rep.Opened, rep.Errno, openFDs(t, pid), idle)

	// Root's work in other sessions, and in the attacked one, while the attacker holds every open it got.
	var failed []string
	try := func(what string, err error) {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
		}
	}
	_, err = os.ReadFile(filepath.Join(m.session("v2"), "session.json"))
	try("root reads v2's session.json", err)
	try("root creates a file in v2", os.WriteFile(filepath.Join(v2, "made"), []byte("x"), 0o644))
	_, err = os.ReadFile(target)
	try("root reads v1's session.json", err)
	ok(t, store, "new", "v3")
	_, err = os.ReadFile(filepath.Join(m.session("v3"), "session.json"))
	try("root reads the new session v3's session.json", err)
	try("a change behind the mount", os.WriteFile(filepath.Join(store, "sessions", "v2", "workspace", "seen"), []byte("after"), 0o644))
	assert.Empty(t, failed, "root's work failed while uid 65534 held %d opens", rep.Opened)
	eventually(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(v2, "seen"))
		return string(b) == "after"
	}, "a change behind the mount did not show through it")
	assert.Equal(t, "EMFILE", rep.Errno, "the attacker was stopped by something else than its share")

	// Its opens are released when it exits: its share is whole again.
	a.stop()
	eventually(t, 30*time.Second, func() bool { return openFDs(t, pid) <= idle+8 },
		"the daemon still holds the attacker's descriptors")
	again, rep2 := fillOpens(t, exe, target)
	defer again.stop()
	t.Logf("uid 65534 again, after its first attacker exited: %d opens, then %s", rep2.Opened, rep2.Errno)
	assert.Equal(t, rep.Opened, rep2.Opened, "the attacker's share was not given back when it exited")
}

package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDaemonLogStampsLibraryLines: a daemon's log has the time on every line, what libraries write through the
// standard logger too (go-fuse's "Failed to read from fuse conn" came with a date of its own format).
func TestDaemonLogStampsLibraryLines(t *testing.T) {
	t.Setenv(readyFdEnv, "3")
	logPath := filepath.Join(t.TempDir(), "mount.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	defer f.Close()
	saved := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = saved }()

	stop := logDaemonWithTimes()
	log.Printf("Failed to read from fuse conn: %v", "103=software caused connection abort")
	os.Stderr.WriteString("sessionfs: a line of our own\n")
	stop()

	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2, "%s", b)
	for _, l := range lines {
		stamp, _, _ := strings.Cut(l, " ")
		_, err := time.Parse(time.RFC3339, stamp)
		assert.NoError(t, err, "a line without its time: %q", l)
	}
	assert.Equal(t, f, os.Stderr, "os.Stderr is put back")
	assert.Equal(t, log.LstdFlags, log.Flags(), "the standard logger is put back")
}

// What the daemon logged before it tells mount --daemon it serves is in the log file by then (TestMountDaemon
// read the log as mount --daemon returned, once before the "serving" line was copied there); the mark that syncs
// is written nowhere, after a whole line or a part of one.
func TestDaemonLogSyncedBeforeReady(t *testing.T) {
	t.Setenv(readyFdEnv, "3")
	logPath := filepath.Join(t.TempDir(), "mount.log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	defer f.Close()
	saved := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = saved }()

	stop := logDaemonWithTimes()
	defer stop()
	for i := range 200 {
		fmt.Fprintf(os.Stderr, "sessionfs: serving line %d\n", i)
		if i == 100 {
			os.Stderr.WriteString("a part of a line")
		}
		syncDaemonLog()
		b, err := os.ReadFile(logPath)
		require.NoError(t, err)
		require.Contains(t, string(b), fmt.Sprintf("serving line %d\n", i), "synced %d", i)
	}
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "\x00")
	assert.Contains(t, string(b), "a part of a line\n")
}

func TestDefaultMountLogIsTheStores(t *testing.T) {
	data, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("SESSIONFS_STORE", "")
	assert.Equal(t, filepath.Join(state, "sessionfs", "mount.log"), defaultMountLog(filepath.Join(data, "sessionfs")))
	a, b := defaultMountLog("/srv/a/store"), defaultMountLog("/srv/b/store")
	assert.NotEqual(t, a, b, "two stores, two logs")
	assert.Regexp(t, `^mount-store-[0-9a-f]{8}\.log$`, filepath.Base(a))
	assert.Equal(t, filepath.Join(state, "sessionfs"), filepath.Dir(a))
	assert.Regexp(t, `^mount-_etc_passwd_-[0-9a-f]{8}\.log$`, filepath.Base(defaultMountLog("/x/\netc passwd\x1b/")), "a store's name is no path")
}

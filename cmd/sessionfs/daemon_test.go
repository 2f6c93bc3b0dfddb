package main

import (
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

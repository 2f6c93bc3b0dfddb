package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// rename refuses a session something runs in (its run lease is held).
func TestRenameRefusesARunningSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	marker := filepath.Join(t.TempDir(), "started")
	running := newGate(t)
	done := make(chan result, 1)
	go func() { done <- cli(t, store, "exec", "s1", "--", "sh", "-c", "touch "+marker+"; "+running.wait()) }()
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }, "the run never started")
	r := cli(t, store, "rename", "s1", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "session s1 is running")
	assert.DirExists(t, filepath.Join(store, "sessions", "s1"))
	running.open(t)
	assert.Equal(t, 0, (<-done).code)
	assert.Equal(t, "s1 -> s2\n", ok(t, store, "rename", "s1", "s2"))
}

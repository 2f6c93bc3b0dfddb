package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gc --dry-run lists every deletion the real run makes, with sizes and a total: it left out the idle session the
// real run trashes and then deletes with the trash.
func TestGCDryRunListsEveryDeletion(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "idle")
	ok(t, store, "new", "gone")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "idle", "workspace", "f"), make([]byte, 100_000), 0o644))
	ok(t, store, "rm", "gone")
	time.Sleep(1100 * time.Millisecond)
	stamp := regexp.MustCompile(`\.\d{8}T\d{6}\.\d+Z`)
	dry := strings.Split(strings.TrimSpace(ok(t, store, "gc", "--idle", "1s", "--trash", "--dry-run")), "\n")
	real := strings.Split(strings.TrimSpace(ok(t, store, "gc", "--idle", "1s", "--trash")), "\n")
	require.Len(t, dry, len(real), "dry run:\n%s\nreal run:\n%s", strings.Join(dry, "\n"), strings.Join(real, "\n"))
	deletes := 0
	for i := range real {
		want := strings.Replace(stamp.ReplaceAllString(real[i], ".T"), "freed", "free", 1)
		assert.Equal(t, want, strings.TrimPrefix(stamp.ReplaceAllString(dry[i], ".T"), "would "))
		if strings.HasPrefix(real[i], "delete ") {
			deletes++
		}
	}
	assert.Equal(t, 2, deletes, "the idle session and the removed one")
	assert.Regexp(t, `^would free \d+(\.\d+)? KiB$`, dry[len(dry)-1])
	assert.Regexp(t, `\(\d+(\.\d+)? KiB\)$`, dry[0])
}

// TestGCSaysWhenNothingQualifies (issue 40, defect 13): gc --dry-run on a store with nothing to collect says so.
func TestGCSaysWhenNothingQualifies(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	assert.Equal(t, "nothing to collect: no session idle for longer than 30d\n", ok(t, store, "gc", "--idle", "30d", "--dry-run"))
	assert.Equal(t, "nothing to collect: the trash is empty\n", ok(t, store, "gc", "--trash", "--dry-run"))
	assert.Equal(t, "nothing to collect: no session idle for longer than 30d, and the trash is empty\n",
		ok(t, store, "gc", "--trash", "--idle", "30d"))
}

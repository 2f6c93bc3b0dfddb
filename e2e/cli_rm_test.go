package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Several rm errors are one line each.
func TestRmErrorsOneALine(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cli(t, store, "rm", "nope1", "s1", "nope2")
	assert.Equal(t, 125, r.code)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 2, r.stderr)
	assert.Contains(t, lines[0], "nope1")
	assert.Contains(t, lines[1], "nope2")
	assert.Contains(t, r.stdout, "s1 -> ", "the good one is removed")
}

// rm of a session something runs in is refused with the lease's message, as rename is (the run would go on in the
// trash and its record be lost); --force removes it all the same.
func TestRmOfARunningSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	holder := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 60")
	eventually(t, 20*time.Second, func() bool { return strings.Contains(holder.out.String(), "holding the lease") },
		"the holder never ran: %s", holder.out)
	r := cli(t, store, "rm", "web")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Regexp(t, `session web is running on host \S+ \(pid \d+\) since \d\d:\d\d \(--force removes it all the same\)`, r.stderr)
	assert.DirExists(t, filepath.Join(store, "sessions", "web"))
	r = cli(t, store, "rm", "--force", "web")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NoDirExists(t, filepath.Join(store, "sessions", "web"))
}

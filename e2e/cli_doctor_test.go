package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDoctor: each check is one OK/WARN/FAIL line, and a stale mount is a FAIL with the fix.
func TestDoctor(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	r := cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^OK\s+fuse\s`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+store\s+`+regexpQuote(store)+` writable`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+mount\s+`+regexpQuote(m.mnt), r.stdout)
	assert.Regexp(t, `(?m)^OK\s+sharing\s+the store's filesystem is not one other hosts mount`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+watches\s+fs\.inotify\.max_user_watches \d+: `, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+docker\s`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+claude\s`, r.stdout)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		assert.Regexp(t, `^(OK|WARN|FAIL) `, line)
	}
	m.kill(t)
	r = cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^FAIL mount\s+.*stale.*sessionfs unmount`, r.stdout)
	assert.Equal(t, 1, r.code, "a FAIL makes doctor fail")
}

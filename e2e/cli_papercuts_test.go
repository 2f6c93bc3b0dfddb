package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCLIPapercuts (issue 50, 5): what a new user hit, each said plainly. Before: new "" (an empty id) said "check: invalid
// session id" (no session named); label ID K- printed the id and a trailing blank; logs --help gave --tail two
// defaults ("(default: all) (default -1)"); --format '{{.Bogus}}' named Go's type (main.lsRow); log, resume and
// search --session gave no "did you mean", and no command did for a transposed name (dmeo); resume of a session
// with no conversation started one without a word.
func TestCLIPapercuts(t *testing.T) {
	store := t.TempDir()
	r := cli(t, store, "new", "")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `session "": invalid session id`)
	assert.NotContains(t, r.stderr, "check:")

	ok(t, store, "new", "demo")
	ok(t, store, "label", "demo", "a=1")
	assert.Equal(t, "demo\n", ok(t, store, "label", "demo", "a-"), "no labels left: the id alone")

	help := ok(t, store, "logs", "--help")
	assert.Contains(t, help, `(default "all")`)
	assert.NotContains(t, help, "(default -1)")
	r = cli(t, store, "logs", "demo", "--tail", "x")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `--tail takes a number of lines, 0 or more, or all (not "x")`)

	r = cli(t, store, "resume", "demo", "--claude", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "session demo has no Claude conversation yet: claude starts a new one", "resume says it begins anew")

	// One suggester for every command that takes a session's name, a transposed one included.
	for _, args := range [][]string{{"show", "dmeo"}, {"log", "dmeo"}, {"resume", "dmeo"}, {"search", "x", "--session", "dmeo"}} {
		r = cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "did you mean demo?", "%v", args)
	}

	r = cli(t, store, "ls", "--format", "{{.Bogus}}")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--format: no field Bogus")
	assert.NotContains(t, r.stderr, "main.")
}

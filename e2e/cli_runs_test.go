package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runs --json tells a run's state: a run killed with -9 is "unfinished" with a null exit code (it showed 0), one
// refused before it started has the 125 the user got (it was -1), and every key is always there.
func TestRunsStatus(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	killed := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 60")
	eventually(t, 20*time.Second, func() bool { return strings.Contains(killed.out.String(), "holding the lease") },
		"the runner never ran: %s", killed.out)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "runs", "web", "--json")), &runs))
	require.Len(t, runs, 1)
	assert.Equal(t, "running", runs[0]["status"])
	killed.kill()
	// -w of a file: the backend refuses it (a missing folder is made, as docker run -w does).
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "web", "workspace", "afile"), nil, 0o644))
	r := cli(t, store, "exec", "-w", "afile", "web", "--", "true")
	require.Equal(t, 125, r.code, r.stderr)
	require.Equal(t, 3, cli(t, store, "exec", "web", "--", "sh", "-c", "exit 3").code)
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "runs", "web", "--json")), &runs))
	require.Len(t, runs, 3)
	for _, run := range runs {
		for _, key := range []string{"backend", "image", "command", "start", "end", "status", "exit_code", "error"} {
			assert.Contains(t, run, key)
		}
	}
	assert.Equal(t, "unfinished", runs[0]["status"])
	assert.Nil(t, runs[0]["exit_code"], "a killed run's exit code is unknown")
	assert.Nil(t, runs[0]["end"])
	assert.Equal(t, "exited", runs[1]["status"])
	assert.Equal(t, float64(125), runs[1]["exit_code"], "what the user got")
	assert.Contains(t, runs[1]["error"], "not a folder")
	assert.Equal(t, float64(3), runs[2]["exit_code"])
	assert.Nil(t, runs[2]["error"])
	assert.Equal(t, "unfinished <nil>\nexited 125\nexited 3\n", ok(t, store, "runs", "web", "--format", "{{.Status}} {{.ExitCode}}"))
}

// One runner per session: exec, run and resume share the lease; --wait waits for it; a killed runner frees it.
func TestLeaseOneRunnerPerSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	ok(t, store, "new", "api")

	first := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", holding+"; exec sleep 60")
	waitRefused(t, store, first)
	for _, args := range [][]string{
		{"run", "web", "--", "true"},
		{"resume", "web", "--claude", "true"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
		assert.Regexp(t, refusal, r.stderr, "%v", args)
	}
	assert.Equal(t, "", strings.TrimSpace(ok(t, store, "exec", "api", "--", "true")), "another session runs meanwhile")

	// --wait: says so once, then runs when the holder goes.
	waiter := startRunner(t, store, nil, "exec", "--wait", "web", "--", "sh", "-c", "echo ran")
	eventually(t, 10*time.Second, func() bool { return strings.Contains(waiter.out.String(), "waiting for it") },
		"the waiter never said it waits")
	assert.False(t, waiter.exited(time.Second), "the waiter waits while the lease is held")

	first.kill() // SIGKILL: the runner releases nothing itself
	require.True(t, waiter.exited(20*time.Second), "the waiter never ran after the holder was killed")
	assert.Equal(t, 0, waiter.cmd.ProcessState.ExitCode(), waiter.out.String())
	assert.Contains(t, waiter.out.String(), "ran")
	ok(t, store, "exec", "web", "--", "true")
}

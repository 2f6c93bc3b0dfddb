package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// Labels are edited after creation (KEY=VALUE sets, KEY- removes); rename gives a session a new id; runs lists
// what ran in a session, a run in progress included.
func TestLabelRenameRuns(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1", "--label", "team=web")
	assert.Equal(t, "s1 stage=review\n", ok(t, store, "label", "s1", "stage=review", "team-"))
	assert.Equal(t, "stage-\nstage=\n:6\n", ok(t, store, "__complete", "label", "s1", ""), "completion offers its labels")
	assert.Equal(t, "s1\n", ok(t, store, "ls", "-q", "--filter", "label=stage=review"))
	r := cli(t, store, "label", "s1", "=x")
	assert.Equal(t, 125, r.code)

	assert.Equal(t, 3, cli(t, store, "exec", "s1", "--", "sh", "-c", "exit 3").code)
	marker := filepath.Join(t.TempDir(), "started")
	running := newGate(t)
	done := make(chan result, 1)
	go func() { done <- cli(t, store, "exec", "s1", "--", "sh", "-c", "touch "+marker+"; "+running.wait()) }()
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }, "the second run never started")
	assert.Regexp(t, `(?m)^Runs\s+2, the last .* on local, running`, ok(t, store, "show", "s1"))
	out := ok(t, store, "runs", "s1")
	assert.Regexp(t, `(?m)^s1/1\s+\S+ \S+\s+local\s+\d\S*s\s+3\s+sh -c exit 3$`, out)
	assert.Regexp(t, `(?m)^s1/2\s+\S+ \S+\s+local\s+running\s+-\s+sh -c touch`, out, "a run in progress is listed")
	running.open(t)
	<-done
	var runs []layout.Run
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "runs", "s1", "--json")), &runs))
	require.Len(t, runs, 2, "one record per run")
	assert.False(t, runs[1].End.IsZero(), "the record is completed when the run ends")
	ok(t, store, "new", "s2")
	assert.Equal(t, "[]\n", ok(t, store, "runs", "s2", "--json"))
	// A runner killed before it recorded the end leaves its run unfinished, not running forever.
	orphan := newGate(t) // the run's sh, left running by its killed runner, ends when the test does
	killed := exec.Command(bin, "exec", "s2", "--", "sh", "-c", "touch "+marker+"2; "+orphan.wait())
	killed.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	require.NoError(t, killed.Start())
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker + "2"); return err == nil }, "the run never started")
	require.NoError(t, killed.Process.Kill())
	_ = killed.Wait()
	assert.Regexp(t, `(?m)\s+local\s+unfinished\s+-\s+sh -c touch`, ok(t, store, "runs", "s2"))

	assert.Equal(t, "s1 -> fix-login\n", ok(t, store, "rename", "s1", "fix-login"))
	assert.Equal(t, "fix-login\ns2\n", ok(t, store, "ls", "-q"))
	r = cli(t, store, "rename", "fix-login", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already exists")
	assert.Contains(t, ok(t, store, "show", "fix-login"), "Runs        2,")
}

// Labels follow Kubernetes' rule: commas, newlines, spaces in keys and 5,000-character values (which broke ls)
// are refused with the rule said, on new and label alike.
func TestLabelsValidated(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1", "--label", "example.com/team=web")
	for _, kv := range []string{"a,b=x", "k=two\nlines", "has space=x", "k=" + strings.Repeat("v", 5000), "k=a,b"} {
		r := cli(t, store, "label", "s1", kv)
		assert.Equal(t, 125, r.code, "%q", kv)
		assert.Regexp(t, "a key is up to 63 characters|a value is empty, or up to 63 characters", r.stderr, "%q", kv)
		r = cli(t, store, "new", "s2", "--label", kv)
		assert.Equal(t, 125, r.code, "%q", kv)
		assert.NoDirExists(t, filepath.Join(store, "sessions", "s2"))
	}
	ok(t, store, "label", "s1", "stage=review", "empty=")
	assert.Contains(t, ok(t, store, "ls"), "empty=,example.com/team=web,stage=review")
}

// TestLabelPrintsAndExplains (issue 40, defect 14): "label ID" alone prints the labels, one a line; a bad value is
// answered with the rule for values.
func TestLabelPrintsAndExplains(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1", "--label", "team=web", "--label", "stage=review")
	assert.Equal(t, "stage=review\nteam=web\n", ok(t, store, "label", "s1"))
	ok(t, store, "new", "bare")
	assert.Equal(t, "", ok(t, store, "label", "bare"))
	r := cli(t, store, "label", "s1", "team=web app")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "a value is empty, or up to 63 characters")
	assert.NotContains(t, r.stderr, "a key is")
}

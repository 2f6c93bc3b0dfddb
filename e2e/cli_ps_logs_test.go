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

// psRuns is ps --json.
func psRuns(t *testing.T, store string, args ...string) []map[string]any {
	t.Helper()
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, append([]string{"ps", "--json"}, args...)...)), &runs))
	return runs
}

func psIDs(runs []map[string]any) []string {
	ids := []string{}
	for _, r := range runs {
		ids = append(ids, r["id"].(string))
	}
	return ids
}

// ps lists the runs in progress across sessions, with their backend, host and command; a run that ends, or whose
// runner dies, drops out; -a lists every run, newest first, with its exit code.
func TestPsListsRunsInProgress(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	ok(t, store, "new", "api")
	ok(t, store, "new", "idle")
	assert.Equal(t, "[]\n", ok(t, store, "ps", "--json"), "nothing runs")

	apiRuns := newGate(t)
	web := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", "echo web up; exec sleep 60")
	api := startRunner(t, store, nil, "exec", "api", "--", "sh", "-c", "echo api up; "+apiRuns.wait())
	eventually(t, 20*time.Second, func() bool {
		return strings.Contains(web.out.String(), "web up") && strings.Contains(api.out.String(), "api up")
	}, "the runs never started: %s %s", web.out, api.out)

	runs := psRuns(t, store)
	require.ElementsMatch(t, []string{"web/1", "api/1"}, psIDs(runs))
	host, err := os.Hostname()
	require.NoError(t, err)
	for _, r := range runs {
		assert.Equal(t, "local", r["backend"])
		assert.Equal(t, host, r["host"])
		assert.Equal(t, "running", r["status"])
		assert.NotNil(t, r["pid"])
		assert.Nil(t, r["exit_code"])
	}
	table := ok(t, store, "ps")
	assert.Regexp(t, `(?m)^RUN\s+BACKEND\s+HOST\s+STARTED\s+STATUS\s+COMMAND$`, table)
	assert.Regexp(t, `(?m)^web/1\s+local\s+\S+\s+.*running\s+sh -c echo web up; exec sleep 60$`, table)
	assert.Regexp(t, `(?m)^api/1\s+local\s+.*running\s+sh -c echo api up`, table)
	assert.Equal(t, 3, strings.Count(table, "\n"), "idle is not listed: %s", table)
	assert.Regexp(t, `(?m)^web/1\s`, ok(t, store, "runs", "web"), "runs names the run as ps does")

	apiRuns.open(t)
	require.True(t, api.exited(20*time.Second), "api's run never ended")
	assert.Equal(t, []string{"web/1"}, psIDs(psRuns(t, store)), "an ended run drops out")
	web.kill()
	assert.Equal(t, "[]\n", ok(t, store, "ps", "--json"), "a run whose runner died drops out")

	require.Equal(t, 3, cli(t, store, "exec", "web", "--", "sh", "-c", "exit 3").code)
	all := psRuns(t, store, "-a")
	require.Len(t, all, 3)
	byID := map[string]map[string]any{}
	for _, r := range all {
		byID[r["id"].(string)] = r
	}
	assert.Equal(t, "web/2", all[0]["id"], "newest first")
	assert.Equal(t, "exited", byID["web/2"]["status"])
	assert.Equal(t, float64(3), byID["web/2"]["exit_code"])
	assert.Equal(t, "exited", byID["api/1"]["status"])
	assert.Equal(t, float64(0), byID["api/1"]["exit_code"])
	assert.Equal(t, "unfinished", byID["web/1"]["status"], "its runner died")
	assert.Nil(t, byID["web/1"]["exit_code"])
	assert.Equal(t, strings.Join(psIDs(all), "\n")+"\n", ok(t, store, "ps", "-aq"))
}

// logs prints what a run printed (stdout and stderr), its last lines with --tail, follows a run in progress with
// -f, and keeps the end of a long output within the cap; the logs follow their session through rename and rm.
func TestLogsPrintsWhatARunPrinted(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	ok(t, store, "exec", "web", "--", "sh", "-c", "echo one; echo two >&2; sleep 0.3; echo three")
	out := ok(t, store, "logs", "web/1")
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		assert.Contains(t, out, line)
	}
	assert.Equal(t, 3, strings.Count(out, "\n"), out)
	assert.Equal(t, out, ok(t, store, "logs", "web"), "a session alone is its latest run")
	assert.Equal(t, "three\n", ok(t, store, "logs", "--tail", "1", "web/1"))

	// The cap: 12 MB printed, the log keeps its end, within 4 MiB.
	r := cli(t, store, "exec", "web", "--", "sh", "-c", "yes 0123456789abcdef | head -c 12000000; echo END")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, r.stdout, 12000004, "the user got all of it")
	long := ok(t, store, "logs", "web/2")
	assert.LessOrEqual(t, len(long), 4<<20)
	assert.GreaterOrEqual(t, len(long), 2<<20)
	assert.True(t, strings.HasSuffix(r.stdout, long), "the log is the end of the output")
	var onDisk int64
	require.NoError(t, filepath.Walk(filepath.Join(store, "logs", "web"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			onDisk += fi.Size()
		}
		return err
	}))
	assert.LessOrEqual(t, onDisk, int64(4<<20), "the cap holds on disk")

	// -f follows a run in progress to its end.
	run := startRunner(t, store, nil, "exec", "web", "--", "sh", "-c", "echo first; sleep 2; echo second")
	eventually(t, 20*time.Second, func() bool { return strings.Contains(run.out.String(), "first") }, "never ran")
	follow := startRunner(t, store, nil, "logs", "-f", "web/3")
	eventually(t, 10*time.Second, func() bool { return strings.Contains(follow.out.String(), "first") },
		"-f printed nothing: %s", follow.out)
	require.True(t, follow.exited(20*time.Second), "-f never ended with the run: %s", follow.out)
	assert.Equal(t, "first\nsecond\n", follow.out.String())

	r = cli(t, store, "logs", "web/9")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "session web has no run web/9 (sessionfs runs web lists them)")

	ok(t, store, "rename", "web", "site")
	assert.Equal(t, "three\n", ok(t, store, "logs", "--tail", "1", "site/1"), "the logs follow a rename")
	ok(t, store, "rm", "site")
	ok(t, store, "trash", "restore", "site")
	assert.Equal(t, "three\n", ok(t, store, "logs", "--tail", "1", "site/1"), "and the trash")
}

// The log is in the store, outside the session: the run's own process, which knows the store and runs as its
// owner, plants links where its next run's log goes, and nothing is written through them.
func TestLogsOutsideTheSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web")
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious\n"), 0o644))
	logs := filepath.Join(store, "logs", "web")
	plant := "echo planting; for f in 2.log 2.log.1; do ln -sf " + victim + " " + logs + "/$f; done"
	ok(t, store, "exec", "web", "--", "sh", "-c", plant)
	fi, err := os.Lstat(filepath.Join(logs, "2.log"))
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link was planted")

	ok(t, store, "exec", "web", "--", "sh", "-c", "echo secret $((6*7))")
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(b), "nothing written through the link")
	assert.Equal(t, "secret 42\n", ok(t, store, "logs", "web/2"))
	fi, err = os.Lstat(filepath.Join(logs, "2.log"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// Nothing of the log is in the session, the session's processes' to write.
	require.NoError(t, filepath.Walk(filepath.Join(store, "sessions", "web"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<20 {
			b, _ := os.ReadFile(p)
			assert.NotContains(t, string(b), "secret 42", p)
		}
		return nil
	}))
}

// ps on a fresh machine, before any store, prints an empty table, as ls does, and makes no store.
func TestPsFreshMachine(t *testing.T) {
	home := t.TempDir()
	fresh := []string{"SESSIONFS_STORE=", "HOME=" + home, "XDG_DATA_HOME="}
	r := cliIn(t, "", "", fresh, "ps", "-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^RUN\s+BACKEND`, r.stdout)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "the header alone: %q", r.stdout)
	r = cliIn(t, "", "", fresh, "ps", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, "[]", r.stdout)
	assert.NoDirExists(t, filepath.Join(home, ".local", "share", "sessionfs"), "ps makes no store")
}

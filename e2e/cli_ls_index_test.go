package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLsFindSeeAnotherHostsChanges (issue 38, item 5): ls and find read the store's index, and a second host
// sharing the store (a plain process writing it as an older sessionfs would: no index update) adds, removes,
// renames and edits sessions and makes a conversation; the next ls and find show all of it at once.
func TestLsFindSeeAnotherHostsChanges(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"a", "b", "c"} {
		ok(t, store, "new", id, "--label", "team=web")
	}
	assert.Equal(t, "a\nb\nc\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"))
	index := filepath.Join(store, "index", "sessions")
	require.FileExists(t, index, "ls made the index")

	changeAsAnotherHost(t, store)
	assert.Equal(t, "a\nc2\nd\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "c2\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"), "a's label was changed")
	assert.Equal(t, "d\n", ok(t, store, "ls", "-q", "--filter", "label=team=cli"), "d was made behind the index")
	assert.Equal(t, "a 1\nc2 0\nd 0\n", ok(t, store, "ls", "--format", "{{.ID}} {{.Conversations}}"))
	assert.Equal(t, "a\n", ok(t, store, "find", hostUUID))
	var found map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "find", hostUUID[:8], "--json")), &found))
	assert.Equal(t, hostUUID, found["conversation"], "a prefix finds it too")
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, "2026-01-02T03:04:05Z", rows[2]["created"])

	b, err := os.ReadFile(index)
	require.NoError(t, err)
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		id, _, _ := strings.Cut(line, "\t")
		ids = append(ids, id)
	}
	assert.Equal(t, []string{"a", "c2", "d"}, ids, "the index was fixed up for what changed")

	// A corrupt index is rebuilt, never trusted.
	require.NoError(t, os.WriteFile(index, []byte("sessionfs-index 1\nghost\t-\tc\t.\t\t{}\n\x00garbage"), 0o644))
	assert.Equal(t, "c2\na\nd\n", ok(t, store, "ls", "-q", "--sort", "created"), "newest first; d says it was made in January")
	assert.NotContains(t, ok(t, store, "ls"), "ghost")
}

// hostUUID is the conversation changeAsAnotherHost makes.
const hostUUID = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"

// changeAsAnotherHost changes store (sessions a, b and c, labelled team=web) as a plain process of another host
// would, an older sessionfs that knows no index: d made, b removed, c renamed c2, a's label edited in place (the
// same size), a conversation made in a.
func changeAsAnotherHost(t *testing.T, store string) {
	t.Helper()
	other := exec.Command("sh", "-euc", `
		cd "$1/sessions"
		mkdir -p d/workspace d/.claude/projects/-session-workspace
		printf '{"id":"d","created":"2026-01-02T03:04:05Z","labels":{"team":"cli"}}\n' > d/session.json
		rm -rf b
		mv c c2
		sed 's/"web"/"ops"/' a/session.json > a.json && cat a.json > a/session.json && rm a.json
		printf '{"type":"user"}\n' > "a/.claude/projects/-session-workspace/$2.jsonl"
	`, "host2", store, hostUUID)
	out, err := other.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestLsFindSeeAnotherHostsChangesOnMooseFS: the same on a real shared filesystem, two MooseFS clients standing
// for two hosts, once the index's records are settled (none racy: the fingerprints alone must find the
// changes, with MooseFS's one-second times). Host A sees host B's changes as soon as its MooseFS client does.
func TestLsFindSeeAnotherHostsChangesOnMooseFS(t *testing.T) {
	cluster := startMooseFS(t)
	hostA, hostB := cluster.mount(t, "host-a"), cluster.mount(t, "host-b")
	storeA, storeB := filepath.Join(hostA.mnt, "store"), filepath.Join(hostB.mnt, "store")
	for _, id := range []string{"a", "b", "c"} {
		ok(t, storeA, "new", id, "--label", "team=web")
	}
	made := time.Now()
	index := filepath.Join(storeA, "index", "sessions")
	racy := regexp.MustCompile(`\t[*c]*r[*c]*\t`)
	lists := 0
	eventually(t, 30*time.Second, func() bool {
		lists++
		ok(t, storeA, "ls", "-q", "--filter", "label=team") // read through the index (ls -q alone reads names)
		b, err := os.ReadFile(index)
		return err == nil && !racy.Match(b)
	}, "the index's records never settled")
	t.Logf("the index settled after %d listings, %v after its sessions were made", lists, time.Since(made))

	start := time.Now()
	changeAsAnotherHost(t, storeB)
	eventually(t, 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(storeA, "sessions", "d", "session.json"))
		return err == nil
	}, "host A's MooseFS client never showed d")
	t.Logf("host A's MooseFS client showed d after %v", time.Since(start))
	const want = "a 1 ops\nc2 0 web\nd 0 cli\n"
	format := `{{.ID}} {{.Conversations}} {{index .Labels "team"}}`
	eventually(t, 30*time.Second, func() bool { return ok(t, storeA, "ls", "--format", format) == want },
		"host A never saw host B's changes: %s", ok(t, storeA, "ls", "--format", format))
	t.Logf("host A listed host B's changes after %v", time.Since(start))
	eventually(t, 30*time.Second, func() bool {
		r := cli(t, storeA, "find", hostUUID)
		return r.code == 0 && r.stdout == "a\n"
	}, "host A never found host B's conversation")
	t.Logf("and found its conversation after %v", time.Since(start))
}

// TestLsSizeIsCached: SIZE is measured when a session changes, not on every ls; --size measures it now, and ls's
// help says so.
func TestLsSizeIsCached(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "a")
	size := func(args ...string) string {
		return strings.TrimSpace(ok(t, store, append([]string{"ls", "--format", "{{.Size}}"}, args...)...))
	}
	before := size()
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "a", "workspace", "big"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, before, size(), "a write in the workspace is not measured by every ls")
	after := size("--size")
	assert.NotEqual(t, before, after, "--size measures it")
	assert.Equal(t, after, size(), "and the index keeps what it measured")
	help := ok(t, store, "ls", "--help")
	assert.Contains(t, help, "SIZE is")
	assert.Contains(t, help, "--size")
}

// TestLsFindTakeTheMountsWord (issue 55): with the store mounted, ls and find take the mount's word for the
// sessions its watch saw unchanged (<mnt>/.sessionfs-index: the fingerprints the index holds, not listed, the
// store's owner's alone) instead of stat-ing every session, and still show a change made behind the mount the
// instant after it was made. Another user (uid 65534, on an --allow-other mount) may not read it.
func TestLsFindTakeTheMountsWord(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"a", "b", "c"} {
		ok(t, store, "new", id, "--label", "team=web")
	}
	// b's record is fingerprinted by one more folder than the others': the mount watches what the index names.
	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "b", ".claude", "projects", "-home-me"), 0o755))
	require.Equal(t, "a\nb\nc\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"), "the index is made")
	m := mount(t, store, "--allow-other")
	vouched := filepath.Join(m.mnt, ".sessionfs-index")
	var said string
	eventually(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(vouched)
		said = string(b)
		return err == nil && strings.Count(said, "\n") == 3
	}, "the mount vouches for its 3 sessions once its watch is armed")
	index, err := os.ReadFile(filepath.Join(store, "index", "sessions"))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(said), "\n") {
		id, fp, _ := strings.Cut(line, " ")
		assert.Contains(t, string(index), "\n"+id+"\t"+fp+"\t", "%s: the mount vouches for what the index holds", id)
	}
	top, err := os.ReadDir(m.mnt)
	require.NoError(t, err)
	for _, e := range top {
		assert.NotEqual(t, ".sessionfs-index", e.Name(), "not listed")
	}
	if os.Geteuid() == 0 {
		for d := filepath.Dir(m.mnt); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755)) // what is checked is the mount's answer
		}
		_, err := asNobody("ls " + m.mnt)
		require.NoError(t, err, "uid 65534 reaches the mount")
		out, err := asNobody("cat " + vouched)
		assert.Error(t, err, "uid 65534 read when each session last changed: %s", out)
		assert.NotContains(t, out, said[:10])
	}

	changeAsAnotherHost(t, store)
	assert.Equal(t, "a\nc2\nd\n", ok(t, store, "ls", "-q", "--filter", "label=team"))
	assert.Equal(t, "c2\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"), "a's label was changed in place")
	assert.Equal(t, "a 1\nc2 0\nd 0\n", ok(t, store, "ls", "--format", "{{.ID}} {{.Conversations}}"))
	assert.Equal(t, "a\n", ok(t, store, "find", hostUUID), "a conversation made a moment ago")
}

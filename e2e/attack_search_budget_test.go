package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The attacks of issue 49's findings 4 and 5, as a session's own processes write them: its own transcripts in the
// store, searched by the user's `sessionfs search`.

// budgetConv is the attacker's conversation.
const budgetConv = "c0ffee00-0000-4000-8000-0000000000b4"

// budgetTranscriptDir is the canonical transcript folder of session id.
func budgetTranscriptDir(store, id string) string {
	return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
}

// budgetLine is one Claude transcript line of role (user, assistant) run in cwd whose message holds parts.
func budgetLine(role, cwd string, n int, parts []map[string]string) string {
	b, err := json.Marshal(map[string]any{"type": role, "sessionId": budgetConv, "cwd": cwd,
		"timestamp": time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format(time.RFC3339),
		"message":   map[string]any{"role": role, "content": parts}})
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// indexBytes is what <store>/index/ holds on disk: the search database and its journals.
func indexBytes(t *testing.T, store string) int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(store, "index"))
	require.NoError(t, err)
	var n int64
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "search.db") && !strings.HasSuffix(e.Name(), ".corrupt") {
			st, err := os.Stat(filepath.Join(store, "index", e.Name()))
			require.NoError(t, err)
			n += st.Size()
		}
	}
	return n
}

// The stated bound of finding 4: a session's index holds at most indexPerText times the text it indexed, plus
// indexFixed (an empty index's pages, the tables' roots).
const (
	indexPerText = 4
	indexFixed   = 1 << 20
)

// TestAttackSearchBudgetIndexSize (issue 49, finding 4): a session writes transcript lines each carrying a
// 4,000-byte cwd and 20,000 one-word text parts. Before, every part was a row of the index holding the cwd: 2.8 MB
// of transcript made a 413 MB index in <store>/index/, outside every session. The index must hold at most
// indexPerText times the text it indexed plus indexFixed, and still find what the session said.
func TestAttackSearchBudgetIndexSize(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	dir := budgetTranscriptDir(store, "s1")
	cwd := "/" + strings.Repeat("d", 3999)
	const lines, partsPerLine = 5, 20000
	var b strings.Builder
	text := int64(len(cwd)) // the cwd is text the index keeps (once)
	for l := range lines {
		parts := make([]map[string]string, partsPerLine)
		for i := range parts {
			w := fmt.Sprintf("w%dx%d", l, i) // every word its own: the worst case for the index's terms
			parts[i] = map[string]string{"type": "text", "text": w}
			text += int64(len(w))
		}
		b.WriteString(budgetLine("assistant", cwd, l, parts))
	}
	b.WriteString(budgetLine("user", "/session/workspace", lines, []map[string]string{{"type": "text", "text": "where is the pangolin"}}))
	text += int64(len("where is the pangolin"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, budgetConv+".jsonl"), []byte(b.String()), 0o600))

	r, took := cliBounded(t, store, nil, "search", "--json", "pangolin")
	require.Equal(t, 0, r.code, r.stderr)
	size := indexBytes(t, store)
	t.Logf("transcript %d bytes, text %d bytes: index %d bytes (%.1f times the text, %.1f times the transcript), first search %v",
		b.Len(), text, size, float64(size)/float64(text), float64(size)/float64(b.Len()), took.Round(time.Millisecond))
	assert.LessOrEqual(t, size, indexPerText*text+indexFixed, "the index grew past %d times the text it holds", indexPerText)
	assert.Contains(t, r.stdout, "where is the pangolin")
	hits := searchJSON(t, store, "w3x12345")
	require.Len(t, hits, 1, "a word of the attacker's parts is still found")
	assert.Contains(t, hits[0].Snippet, "w3x12345")
	assert.Equal(t, cwd, hits[0].Cwd, "the cwd is kept (once)")
}

// TestAttackSearchBudgetHardLinkedSubagents (issue 49, finding 5, and the hard links of finding 4): a session's
// conversation has one subagent's transcript; then its subagents/ folder holds 400 hard links of it. Before, the
// index read and held each link as a subagent of its own (the per-file bound counted the main transcript only):
// search went from about a second to no answer in 60 s, and the index grew 400 times. Each inode is read and
// indexed once: the first search of the attacked store takes at most twice the quiet one's time, and the index
// is no bigger.
func TestAttackSearchBudgetHardLinkedSubagents(t *testing.T) {
	const links = 400
	// make lays out a store with session s1, whose conversation's subagent says the needle once among ~4 MB of
	// words; with links, that subagent file is linked links times more in subagents/.
	layOut := func(links int) string {
		store := t.TempDir()
		ok(t, store, "new", "s1")
		dir := budgetTranscriptDir(store, "s1")
		main := budgetLine("user", "/session/workspace", 0, []map[string]string{{"type": "text", "text": "start the subagent"}})
		require.NoError(t, os.WriteFile(filepath.Join(dir, budgetConv+".jsonl"), []byte(main), 0o600))
		subs := filepath.Join(dir, budgetConv, "subagents")
		require.NoError(t, os.MkdirAll(subs, 0o700))
		var sb strings.Builder
		for i := 0; sb.Len() < 4<<20; i++ {
			said := fmt.Sprintf("step %d of the survey: the ridge, the valley and the river bend number %d", i, i*7)
			if i == 5000 {
				said = "the okapi was seen at the ford"
			}
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			sb.WriteString(budgetLine(role, "/session/workspace", i, []map[string]string{{"type": "text", "text": said}}))
		}
		first := filepath.Join(subs, "agent-a000.jsonl")
		require.NoError(t, os.WriteFile(first, []byte(sb.String()), 0o600))
		for i := 1; i <= links; i++ {
			require.NoError(t, os.Link(first, filepath.Join(subs, fmt.Sprintf("agent-a%03d.jsonl", i))))
		}
		return store
	}
	// timeSearch is a first search (from an index made anew): what indexing the store costs.
	timeSearch := func(store string) (time.Duration, result) {
		require.NoError(t, os.RemoveAll(filepath.Join(store, "index")))
		r, took := cliBounded(t, store, nil, "search", "--json", "okapi")
		require.Equal(t, 0, r.code, r.stderr)
		return took, r
	}
	quietStore, attackedStore := layOut(0), layOut(links)
	// Quiet and attacked in turns, the best of three each: the machine's other work weighs on both alike.
	var quiet, attacked time.Duration
	var qr, ar result
	for range 3 {
		q, r := timeSearch(quietStore)
		t.Logf("quiet: %v", q.Round(time.Millisecond))
		if quiet == 0 || q < quiet {
			quiet, qr = q, r
		}
		a, r := timeSearch(attackedStore)
		t.Logf("attacked: %v", a.Round(time.Millisecond))
		if attacked == 0 || a < attacked {
			attacked, ar = a, r
		}
	}
	quietSize, attackedSize := indexBytes(t, quietStore), indexBytes(t, attackedStore)
	t.Logf("search: %v quiet, %v with %d hard links of the subagent's transcript (%.2fx); index %d bytes quiet, %d attacked",
		quiet.Round(time.Millisecond), attacked.Round(time.Millisecond), links, float64(attacked)/float64(quiet), quietSize, attackedSize)
	assert.LessOrEqual(t, attacked, 2*quiet, "search under the attack took more than twice its quiet time")
	assert.LessOrEqual(t, attackedSize, quietSize+quietSize/4, "the links grew the index")
	var quietHits, attackedHits []searchHit
	require.NoError(t, json.Unmarshal([]byte(qr.stdout), &quietHits))
	require.NoError(t, json.Unmarshal([]byte(ar.stdout), &attackedHits))
	assert.Len(t, quietHits, 1)
	assert.Len(t, attackedHits, 1, "the subagent's transcript is indexed once, whatever links it has")
}

// TestAttackSearchManyTopNames: search tells which agents' folders a session holds by listing the session's own
// folder, which the session's processes write. Session s2's process (uid 65534) makes 300,000 folders there. The
// user's search of s1's words must not read them all on every query: bound, at most twice the quiet query's time
// plus 50 ms. Before the bound (9f77cb2) a query took 0.16 s against 0.01 s, and 60 MB against 17.
func TestAttackSearchManyTopNames(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: the attacker is uid 65534, owner of its session's folder")
	store := t.TempDir()
	for _, d := range []string{filepath.Dir(store), store} { // the attacker reaches its session's folder
		require.NoError(t, os.Chmod(d, 0o755))
	}
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	require.NoError(t, os.WriteFile(filepath.Join(budgetTranscriptDir(store, "s1"), budgetConv+".jsonl"),
		[]byte(budgetLine("user", "/session/workspace", 0, []map[string]string{{"type": "text", "text": "where is the quokka"}})), 0o600))
	query := func() time.Duration {
		var best time.Duration
		for i := range 5 { // the fastest of five: the machine's noise is not the attack
			r, took := cliBounded(t, store, nil, "search", "quokka")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "where is the quokka")
			if i == 0 || took < best {
				best = took
			}
		}
		return best
	}
	quiet := query()

	s2 := giveSession(t, store, "s2")
	const names = 300000
	cmd := exec.Command("sh", "-c", fmt.Sprintf("seq -f 'd%%06g' %d | xargs mkdir", names))
	cmd.Dir = s2
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	syscall.Sync() // the folders' writeback is not timed with the queries
	attacked := query()
	t.Logf("a query: %v quiet, %v with %d folders in s2's own folder (bound: %v)", quiet, attacked, names, 2*quiet+50*time.Millisecond)
	assert.LessOrEqual(t, attacked, 2*quiet+50*time.Millisecond, "search read every name the session made")
}

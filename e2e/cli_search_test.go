package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/openaistub"
	"github.com/sessionfs/sessionfs/search/searchtest"
)

// searchHit is a hit as search --json prints it.
type searchHit struct {
	Session, Agent, Conversation, Cwd, Kind, Snippet string
	Time                                             time.Time
	Marks                                            [][2]int
}

func searchJSON(t *testing.T, store string, args ...string) []searchHit {
	t.Helper()
	var hits []searchHit
	r := cli(t, store, append([]string{"search", "--json"}, args...)...)
	require.Contains(t, []int{0, 1}, r.code, "search --json %v (1: no match): %s", args, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &hits))
	assert.Equal(t, r.code == 1, len(hits) == 0, "exit 1 exactly when nothing matched")
	return hits
}

// TestSearchFindsWhatAgentsSaid: a needle said in a real Claude CLI conversation (each pinned CLI) and in a real
// Codex one is found by search (ranked hits, -l, --json, --agent), and what a resumed conversation appends is
// found within a second.
func TestSearchFindsWhatAgentsSaid(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) { searchFindsWhatAgentsSaid(t, c.path) })
}

func searchFindsWhatAgentsSaid(t *testing.T, claude string) {
	store, api := claudeSetup(t)
	codex := agentCLI(t, "codex")
	workspace := filepath.Join(store, "sessions", "s1", "workspace")
	configDir := filepath.Join(store, "sessions", "s1", ".claude")
	const needle = "quetzalcoatl"

	out, err := claudeRun(t, claude, api.URL, configDir, workspace, "-p", "where did the "+needle+" fly to")
	require.NoError(t, err, out)
	tr, err := filepath.Glob(filepath.Join(configDir, "projects", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, tr, 1, "one Claude transcript")
	uuid := strings.TrimSuffix(filepath.Base(tr[0]), ".jsonl")

	oapi, err := openaistub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { oapi.Close() })
	provider := []string{"-c", `model_provider="stub"`, "-c", `model_providers.stub={name="stub",base_url="` + oapi.URL +
		`",wire_api="responses",env_key="OPENAI_API_KEY",supports_websockets=false}`}
	out, err = agentOutside(t, store, "codex", workspace, agentEnv(t, "OPENAI_API_KEY=sk-test"),
		append(append([]string{codex, "exec", "--skip-git-repo-check"}, provider...), "the "+needle+" again, in codex")...)
	require.NoError(t, err, out)

	// The plain listing: each hit's session, agent, conversation, time, cwd, and the snippet.
	r := cli(t, store, "search", needle)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "s1  claude  "+uuid+"  ")
	assert.Contains(t, r.stdout, "s1  codex  ")
	assert.Contains(t, r.stdout, "where did the "+needle+" fly to")
	assert.NotContains(t, r.stdout, "\x1b[", "no colour when stdout is not a terminal")

	hits := searchJSON(t, store, needle)
	require.Len(t, hits, 2, "%+v", hits)
	var agents []string
	for _, h := range hits {
		agents = append(agents, h.Agent)
		assert.Equal(t, "s1", h.Session)
		assert.Equal(t, "prompt", h.Kind)
		assert.False(t, h.Time.IsZero())
		assert.NotEmpty(t, h.Cwd)
		require.Len(t, h.Marks, 1)
		assert.Equal(t, needle, h.Snippet[h.Marks[0][0]:h.Marks[0][1]])
	}
	slices.Sort(agents)
	assert.Equal(t, []string{"claude", "codex"}, agents)
	codexHits := searchJSON(t, store, needle, "--agent", "codex")
	require.Len(t, codexHits, 1)
	assert.Equal(t, "the "+needle+" again, in codex", codexHits[0].Snippet)
	assert.Len(t, searchJSON(t, store, `"`+needle+` fly"`), 1, "a phrase")
	assert.Len(t, searchJSON(t, store, "quetzal*"), 2, "a prefix")

	// -l: the sessions with a match, once each.
	ok(t, store, "new", "s2")
	assert.Equal(t, "s1\n", ok(t, store, "search", "-l", needle))
	r = cli(t, store, "search", "-l", needle, "--session", "s2")
	assert.Equal(t, 1, r.code, "nothing matched: exit 1, as grep's (%s)", r.stderr)
	assert.Empty(t, r.stdout)

	// A conversation resumed: what it appends is searchable within a second of being written.
	const second = "ouroboros"
	out, err = claudeRun(t, claude, api.URL, configDir, workspace, "-p", "--resume", uuid, "now the "+second)
	require.NoError(t, err, out)
	written := time.Now()
	eventually(t, time.Second, func() bool {
		return len(searchJSON(t, store, second)) == 1
	}, "the appended prompt is not found within 1 s")
	t.Logf("the append was found %v after claude exited", time.Since(written).Round(time.Millisecond))
	hits = searchJSON(t, store, second)
	assert.Equal(t, uuid, hits[0].Conversation)
	assert.Len(t, searchJSON(t, store, needle), 2, "the older entries once each")

	// A query FTS5 cannot read: exit 2, as grep's, and what to type instead.
	r = cli(t, store, "search", `"unterminated`)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "unterminated string")
	assert.Contains(t, r.stderr, "double quotes")

	// --reindex builds the same index anew.
	ok(t, store, "search", "--reindex")
	assert.Len(t, searchJSON(t, store, needle), 2)
	assert.FileExists(t, filepath.Join(store, "index", "search.db"))
}

// TestSearchReadsOnlyTheSessionsOwnFiles: what a session plants for the index to read (a transcript that is a link
// to a host file, a FIFO, a folder of links, escape sequences meant for the terminal) never brings a byte from
// outside the session into the index, never blocks search, and reaches the terminal as text.
func TestSearchReadsOnlyTheSessionsOwnFiles(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	// A host folder (0700) holding transcripts, Claude's and Codex's, saying the secret word, as the session would
	// want them indexed.
	host := hostSecret(t)
	require.NoError(t, os.Remove(filepath.Join(host, "secret")))
	secretLine := `{"type":"user","sessionId":"x","timestamp":"2026-11-26T01:00:00Z","cwd":"/w","message":{"role":"user","content":"` + hostMarker + ` pelican"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(host, "c0ffee00-0000-4000-8000-00000000000d.jsonl"), []byte(secretLine), 0o600))
	rollout := "rollout-2026-11-26T01-00-00-01a20739-265b-7793-acee-f94fce8f06e3.jsonl"
	require.NoError(t, os.WriteFile(filepath.Join(host, rollout), []byte(`{"timestamp":"2026-11-26T01:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"`+hostMarker+` pelican"}]}}`+"\n"), 0o600))
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.Symlink(filepath.Join(host, "c0ffee00-0000-4000-8000-00000000000d.jsonl"), filepath.Join(canon, "c0ffee00-0000-4000-8000-00000000000a.jsonl")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(canon, "c0ffee00-0000-4000-8000-00000000000b.jsonl"), 0o600))
	require.NoError(t, os.Symlink(host, filepath.Join(store, "sessions", "s1", ".claude", "projects", "-elsewhere")))
	codexMonth := filepath.Join(store, "sessions", "s1", ".codex", "sessions", "2026", "11")
	require.NoError(t, os.MkdirAll(codexMonth, 0o700))
	require.NoError(t, os.Symlink(host, filepath.Join(codexMonth, "26")))
	// And a transcript of its own whose text carries escape sequences (OSC 52 writes the clipboard, CSI clears).
	own := `{"type":"user","sessionId":"y","timestamp":"2026-11-26T01:00:00Z","cwd":"/w\u001b]0;title\u0007","message":{"role":"user","content":"pelican \u001b]52;c;cGF5bG9hZA==\u0007 and \u001b[2J"}}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(canon, "c0ffee00-0000-4000-8000-00000000000c.jsonl"), []byte(own), 0o600))

	r := cli(t, store, "search", "pelican")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, hostMarker)
	assert.NotContains(t, r.stdout+r.stderr, "\x1b", "an escape sequence reached the terminal")
	assert.Contains(t, r.stdout, `pelican \x1b]52;c;cGF5bG9hZA==\x07 and \x1b[2J`, "shown as text")
	assert.Contains(t, r.stdout, `/w\x1b]0;title\x07`, "the cwd too")
	assert.Empty(t, searchJSON(t, store, hostMarker), "the host files were never read")
	hits := searchJSON(t, store, "pelican")
	require.Len(t, hits, 1)
	assert.Equal(t, "c0ffee00-0000-4000-8000-00000000000c", hits[0].Conversation)
	st, err := os.Stat(filepath.Join(store, "index", "search.db"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the index is the store owner's alone")
}

// TestSearchConcurrentCLIs: CLIs searching and reindexing the same store at once (each catching up first) all
// answer: one waits for another's write, none says "database is locked", nothing is indexed twice.
func TestSearchConcurrentCLIs(t *testing.T) {
	store := t.TempDir()
	made, err := searchtest.Make(store, 300, 10, 16<<10)
	require.NoError(t, err)
	args := [][]string{{"search", searchtest.Needle}, {"search", "--reindex"}, {"search", "-l", searchtest.Needle},
		{"search", "--json", made.Common}, {"search", searchtest.NeedleQuery}, {"search", "--reindex", searchtest.Needle}}
	results := make([]result, len(args))
	var wg sync.WaitGroup
	for i, a := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cli(t, store, a...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, 0, r.code, "%v: %s", args[i], r.stderr)
		assert.NotContains(t, r.stderr, "locked", "%v", args[i])
		assert.NotContains(t, r.stderr, "busy", "%v", args[i])
	}
	assert.Len(t, searchJSON(t, store, searchtest.Needle), searchtest.Needles, "each needle once")
	assert.Len(t, strings.Fields(ok(t, store, "search", "-l", made.Common)), made.Sessions)
}

package search

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/layout"
)

func TestFTS5CompiledIn(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE VIRTUAL TABLE t USING fts5(x)`)
	require.NoError(t, err, "modernc.org/sqlite is built without FTS5")
}

// newStore is a store with the sessions ids, empty.
func newStore(t *testing.T, ids ...string) *layout.Store {
	t.Helper()
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for _, id := range ids {
		_, err := s.Create(id, layout.CreateOptions{})
		require.NoError(t, err)
	}
	return s
}

func openIndex(t *testing.T, s *layout.Store) (*Index, *[]string) {
	t.Helper()
	warnings := &[]string{}
	ix, err := Open(s, func(m string) { *warnings = append(*warnings, m) })
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return ix, warnings
}

var at = time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)

// claudeLine is one Claude transcript line: a user prompt or an assistant reply saying text.
func claudeLine(role, text string, n int) string {
	content := any(text)
	if role == "assistant" {
		content = []map[string]string{{"type": "text", "text": text}}
	}
	b, _ := json.Marshal(map[string]any{"type": role, "sessionId": "c0ffee00-0000-4000-8000-000000000001",
		"timestamp": at.Add(time.Duration(n) * time.Minute).Format(time.RFC3339), "cwd": "/session/workspace",
		"message": map[string]any{"role": role, "content": content}})
	return string(b) + "\n"
}

const theConv = "c0ffee00-0000-4000-8000-000000000001"

func transcript(s *layout.Store, id, conv string) string {
	return filepath.Join(s.Dir(id), layout.ProjectsDir, layout.CanonicalProject, conv+".jsonl")
}

func appendTo(t *testing.T, p string, lines ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, ""))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func search(t *testing.T, ix *Index, q Query) []Hit {
	t.Helper()
	res, err := ix.Search(q)
	require.NoError(t, err)
	assert.True(t, res.Ranked)
	return res.Hits
}

func entryCount(t *testing.T, ix *Index) int {
	t.Helper()
	var n int
	require.NoError(t, ix.db.QueryRow(`SELECT count(*) FROM entry`).Scan(&n))
	return n
}

func TestAppendIndexesOnlyTheNewEntries(t *testing.T) {
	s := newStore(t, "demo")
	ix, _ := openIndex(t, s)
	p := transcript(s, "demo", theConv)
	appendTo(t, p, claudeLine("user", "where is the walrus", 0), claudeLine("assistant", "in the aquarium", 1))
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "walrus"})
	require.Len(t, hits, 1)
	assert.Equal(t, Hit{Session: "demo", Agent: "claude", Conversation: theConv, Time: at.Local(), Cwd: "/session/workspace",
		Kind: "prompt", Snippet: "where is the walrus", Marks: [][2]int{{13, 19}}, Score: hits[0].Score}, hits[0])

	before := inserted.Load()
	appendTo(t, p, claudeLine("user", "and the narwhal", 2))
	require.NoError(t, ix.CatchUp(nil))
	assert.Equal(t, int64(1), inserted.Load()-before, "an append indexes its own entries only")
	assert.Len(t, search(t, ix, Query{Match: "narwhal"}), 1)
	assert.Len(t, search(t, ix, Query{Match: "walrus"}), 1, "the older entries stay, once")
	assert.Equal(t, 3, entryCount(t, ix))

	before = inserted.Load()
	require.NoError(t, ix.CatchUp(nil))
	assert.Zero(t, inserted.Load()-before, "nothing changed, nothing read")
}

func TestATornLineWaitsForItsNewline(t *testing.T) {
	s := newStore(t, "demo")
	ix, _ := openIndex(t, s)
	p := transcript(s, "demo", theConv)
	line := claudeLine("user", "half written platypus", 0)
	appendTo(t, p, line[:len(line)/2])
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "platypus"}))
	appendTo(t, p, line[len(line)/2:])
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "platypus"}), 1)
}

func TestARewrittenFileIsReindexedWhole(t *testing.T) {
	s := newStore(t, "demo")
	ix, _ := openIndex(t, s)
	p := transcript(s, "demo", theConv)
	appendTo(t, p, claudeLine("user", "first version mentions okapi", 0), claudeLine("assistant", "ok", 1))
	require.NoError(t, ix.CatchUp(nil))
	require.Len(t, search(t, ix, Query{Match: "okapi"}), 1)

	// Same inode, longer, but what was indexed changed: not an append.
	require.NoError(t, os.WriteFile(p, []byte(claudeLine("user", "second version mentions quokka instead", 0)+
		claudeLine("assistant", "fine", 1)+claudeLine("user", "more", 2)), 0o600))
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "okapi"}))
	assert.Len(t, search(t, ix, Query{Match: "quokka"}), 1)
	assert.Equal(t, 3, entryCount(t, ix))

	// Shrunk.
	require.NoError(t, os.WriteFile(p, []byte(claudeLine("user", "just a dingo", 0)), 0o600))
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "quokka"}))
	assert.Len(t, search(t, ix, Query{Match: "dingo"}), 1)
	assert.Equal(t, 1, entryCount(t, ix))
}

func TestRemovedConversationsAndSessionsAreDropped(t *testing.T) {
	s := newStore(t, "one", "two")
	ix, _ := openIndex(t, s)
	other := "c0ffee00-0000-4000-8000-000000000002"
	appendTo(t, transcript(s, "one", theConv), claudeLine("user", "tapir in one", 0))
	appendTo(t, transcript(s, "one", other), claudeLine("user", "tapir again in one", 0))
	appendTo(t, transcript(s, "two", theConv), claudeLine("user", "tapir in two", 0))
	require.NoError(t, ix.CatchUp(nil))
	require.Len(t, search(t, ix, Query{Match: "tapir"}), 3)

	require.NoError(t, os.Remove(transcript(s, "one", other)))
	require.NoError(t, ix.Update("one"))
	assert.Len(t, search(t, ix, Query{Match: "tapir"}), 2)

	_, err := s.Remove("two")
	require.NoError(t, err)
	require.NoError(t, ix.Update("two"))
	hits := search(t, ix, Query{Match: "tapir"})
	require.Len(t, hits, 1)
	assert.Equal(t, "one", hits[0].Session)
	var convs int
	require.NoError(t, ix.db.QueryRow(`SELECT count(*) FROM conv`).Scan(&convs))
	assert.Equal(t, 1, convs)
}

func TestFilters(t *testing.T) {
	s := newStore(t, "one", "two")
	ix, _ := openIndex(t, s)
	appendTo(t, transcript(s, "one", theConv), claudeLine("user", "ibex early", 0), claudeLine("user", "ibex ibex late", 120))
	appendTo(t, transcript(s, "two", theConv), claudeLine("user", "ibex elsewhere", 0))
	rollout := filepath.Join(s.Dir("two"), ".codex/sessions/2026/11/26/rollout-2026-11-26T01-00-00-01a20739-265b-7793-acee-f94fce8f06e3.jsonl")
	appendTo(t, rollout, `{"timestamp":"2026-11-26T01:00:00Z","type":"session_meta","payload":{"id":"01a20739-265b-7793-acee-f94fce8f06e3","cwd":"/w"}}`+"\n",
		`{"timestamp":"2026-11-26T01:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"codex ibex"}]}}`+"\n")
	require.NoError(t, ix.CatchUp(nil))

	assert.Len(t, search(t, ix, Query{Match: "ibex"}), 4)
	hits := search(t, ix, Query{Match: "ibex", Agent: "codex"})
	require.Len(t, hits, 1)
	assert.Equal(t, Hit{Session: "two", Agent: "codex", Conversation: "01a20739-265b-7793-acee-f94fce8f06e3",
		Time: at.Add(time.Second).Local(), Cwd: "/w", Kind: "prompt", Offset: hits[0].Offset, Snippet: "codex ibex",
		Marks: [][2]int{{6, 10}}, Score: hits[0].Score}, hits[0])
	assert.Len(t, search(t, ix, Query{Match: "ibex", Sessions: []string{"one"}}), 2)
	assert.Empty(t, search(t, ix, Query{Match: "ibex", Sessions: []string{}}))
	hits = search(t, ix, Query{Match: "ibex", Since: at.Add(time.Hour)})
	require.Len(t, hits, 1)
	assert.Equal(t, "ibex ibex late", hits[0].Snippet)
	assert.Len(t, search(t, ix, Query{Match: "ibex", Limit: 2}), 2)

	ids, err := ix.SessionIDs(Query{Match: "ibex"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"one", "two"}, ids)
	ids, err = ix.SessionIDs(Query{Match: "codex"})
	require.NoError(t, err)
	assert.Equal(t, []string{"two"}, ids)

	// Phrase and prefix.
	assert.Len(t, search(t, ix, Query{Match: `"ibex late"`}), 1)
	assert.Len(t, search(t, ix, Query{Match: `"late ibex"`}), 0)
	assert.Len(t, search(t, ix, Query{Match: `elsew*`}), 1)
}

func TestHostileTextIsData(t *testing.T) {
	s := newStore(t, "demo")
	ix, _ := openIndex(t, s)
	hostile := []string{
		`'); DROP TABLE conv; -- "quoted" NEAR(a b) OR * ^start AND NOT x:y`,
		"escape \x1b]52;c;cGF5bG9hZA==\x07 and \x1b[2J clear, NUL \x00 and a bidi \u202e override",
		"invalid utf-8 \xff\xfe here",
		"marks \x02 of snippet \x03 forged",
	}
	var lines []string
	for i, h := range hostile {
		lines = append(lines, claudeLine("user", "gnu "+h, i))
	}
	appendTo(t, transcript(s, "demo", theConv), lines...)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "gnu", Limit: 10})
	require.Len(t, hits, len(hostile), "every line indexed, the tables intact")
	for _, h := range hits {
		for _, r := range h.Snippet {
			assert.False(t, r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0x202e, "a control character in %q", h.Snippet)
		}
	}
	assert.Len(t, search(t, ix, Query{Match: `"DROP TABLE conv"`}), 1)
	forged := search(t, ix, Query{Match: "forged"})
	require.Len(t, forged, 1)
	assert.Equal(t, [][2]int{{strings.Index(forged[0].Snippet, "forged"), strings.Index(forged[0].Snippet, "forged") + 6}}, forged[0].Marks)

	// Queries a user types: FTS5's syntax or not, never a panic, a clear error when FTS5 cannot read them.
	for _, q := range []string{`conv;`, `x:y`, `'); DROP`, `NEAR(`, `fix-login`, `don't`, `C++`, `a.b*`, `""`, `^start`} {
		_, err := ix.Search(Query{Match: q})
		if err != nil {
			assert.ErrorIs(t, err, ErrQuery, q)
		}
	}
	for _, q := range []string{`"unterminated`, `a) OR (`, `AND`} {
		_, err := ix.Search(Query{Match: q})
		assert.ErrorIs(t, err, ErrQuery, q)
	}
	_, err := ix.Search(Query{Match: "  "})
	assert.ErrorIs(t, err, ErrQuery)
	var n int
	require.NoError(t, ix.db.QueryRow(`SELECT count(*) FROM conv`).Scan(&n))
	assert.Equal(t, 1, n)
}

func TestNormalize(t *testing.T) {
	for q, want := range map[string]string{
		`walrus`:              `walrus`,
		`fix-login`:           `"fix-login"`,
		`fix-log*`:            `"fix-log"*`,
		`"a phrase" OR b*`:    `"a phrase" OR b*`,
		`NEAR(a b)`:           `NEAR ( a b )`,
		`say "x""y" z`:        `say "x""y" z`,
		`café naïve`:          `café naïve`,
		`a"b`:                 `a "b`,
		`(x OR y) AND NOT z`:  `( x OR y ) AND NOT z`,
		`path/to/file.go`:     `"path/to/file.go"`,
		`"unterminated words`: `"unterminated words`,
	} {
		assert.Equal(t, want, Normalize(q), q)
	}
}

func TestACorruptIndexIsRebuilt(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the jackalope", 0))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	ix.Close()

	db := filepath.Join(s.Root, Dir, DBName)
	require.NoError(t, os.WriteFile(db, []byte(strings.Repeat("not a database ", 1000)), 0o600))
	os.Remove(db + "-wal") // checkpointed on close: none, usually
	ix, warnings := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "jackalope"}), 1)
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "is damaged (file is not a database")
	assert.FileExists(t, db+".corrupt")
	ix.Close()

	// Damaged inside: pages past the header overwritten.
	data, err := os.ReadFile(db)
	require.NoError(t, err)
	for i := 4096; i+4096 <= len(data); i += 4096 {
		copy(data[i:], strings.Repeat("\xa5", 4096))
	}
	require.NoError(t, os.WriteFile(db, data, 0o600))
	ix, warnings = openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "jackalope"}), 1)
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "is damaged (database disk image is malformed")
}

func TestModes(t *testing.T) {
	s := newStore(t)
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	for _, name := range []string{DBName, DBName + "-wal", DBName + "-shm"} {
		st, err := os.Stat(filepath.Join(s.Root, Dir, name))
		require.NoError(t, err)
		assert.Zero(t, st.Mode().Perm()&0o077, "%s: %v", name, st.Mode())
	}
}

// zebraStore is a store of sessions s00, s01, ... of convs conversations of lines prompts each, every one saying
// zebra.
func zebraStore(t *testing.T, sessions, convs, lines int) *layout.Store {
	t.Helper()
	var ids []string
	for i := range sessions {
		ids = append(ids, fmt.Sprintf("s%02d", i))
	}
	s := newStore(t, ids...)
	for _, id := range ids {
		for c := range convs {
			var said []string
			for n := range lines {
				said = append(said, claudeLine("user", fmt.Sprintf("zebra %s %d %d", id, c, n), n))
			}
			appendTo(t, transcript(s, id, fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", c)), said...)
		}
	}
	return s
}

// Two processes catching up at once (two CLIs, a daemon and a CLI): each waits for the other's transaction, none
// fails, nothing is indexed twice.
func TestConcurrentCatchUps(t *testing.T) {
	s := zebraStore(t, 20, 5, 20)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix, err := Open(s, nil) // an index of its own: another connection, as another process has
			if err != nil {
				errs[i] = fmt.Errorf("open: %w", err)
				return
			}
			defer ix.Close()
			if err := ix.CatchUp(nil); err != nil {
				errs[i] = fmt.Errorf("catch-up: %w", err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	ix, _ := openIndex(t, s)
	assert.Equal(t, 20*5*20, entryCount(t, ix))
	ids2, err := ix.SessionIDs(Query{Match: "zebra"})
	require.NoError(t, err)
	assert.Len(t, ids2, 20)
}

// A conversation's subagents (Claude's sidecar transcripts) are indexed with it, marked; what the subagent's file
// appends reindexes the conversation, what the main file appends is an append.
func TestSubagentsAreIndexedWithTheirConversation(t *testing.T) {
	s := newStore(t, "demo")
	canon := filepath.Join(s.Dir("demo"), layout.ProjectsDir, layout.CanonicalProject)
	require.NoError(t, os.CopyFS(canon, os.DirFS("../agents/claude/testdata/projects/-tmp-wd")))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: `"Reply with one word"`})
	require.NotEmpty(t, hits)
	assert.Equal(t, "aa60665581de99ce5", hits[0].Subagent)
	assert.Equal(t, "efa92ef9-e802-408b-8900-34b6a9691f2b", hits[0].Conversation)
	all := entryCount(t, ix)

	main := filepath.Join(canon, "efa92ef9-e802-408b-8900-34b6a9691f2b.jsonl")
	before := inserted.Load()
	appendTo(t, main, claudeLine("user", "a later capybara", 99))
	require.NoError(t, ix.CatchUp(nil))
	assert.Equal(t, int64(1), inserted.Load()-before, "the main file's append alone")
	assert.Len(t, search(t, ix, Query{Match: "capybara"}), 1)

	sub := filepath.Join(canon, "efa92ef9-e802-408b-8900-34b6a9691f2b/subagents/agent-aa60665581de99ce5.jsonl")
	appendTo(t, sub, claudeLine("assistant", "the subagent's axolotl", 100))
	require.NoError(t, ix.CatchUp(nil))
	hits = search(t, ix, Query{Match: "axolotl"})
	require.Len(t, hits, 1)
	assert.Equal(t, "aa60665581de99ce5", hits[0].Subagent)
	assert.Equal(t, all+2, entryCount(t, ix), "reindexed whole, nothing twice")
}

// A process that planned its catch-up before another's --reindex emptied the index records no session as indexed
// after it: the reindexing process's own catch-up must not skip the session.
func TestAReindexElsewhereIsNotUndone(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the wombat", 0))
	a, _ := openIndex(t, s)
	require.NoError(t, a.CatchUp(nil))
	sigs, gen, err := a.sessionSigs() // a plans: nothing to do for demo
	require.NoError(t, err)
	l, _, err := a.list("demo")
	require.NoError(t, err)
	require.Equal(t, sigs["demo"], l.sig())

	b, _ := openIndex(t, s)
	require.NoError(t, b.reset("")) // b's --reindex empties the index
	require.NoError(t, a.apply([]sessionWork{{id: "demo", sig: l.sig(), gen: gen}}, nil))
	require.NoError(t, b.CatchUp(nil))
	assert.Len(t, search(t, b, Query{Match: "wombat"}), 1)
}

// A conversation file larger than MaxFile is left out with a warning, the others indexed.
func TestAHugeFileIsLeftOut(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the small one", 0))
	huge := transcript(s, "demo", "c0ffee00-0000-4000-8000-0000000000ff")
	appendTo(t, huge, claudeLine("user", "the huge one", 0))
	require.NoError(t, os.Truncate(huge, MaxFile+1)) // sparse: no disk spent
	ix, warnings := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "small"}), 1)
	assert.Empty(t, search(t, ix, Query{Match: "huge"}))
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "more than the 536870912 a conversation file may have to be indexed")
}

// A session whose own folder holds more names than all.Held reads of it (they are the session's to make) is
// searched as any other: every agent's folder is looked for, none taken as missing.
func TestASessionOfManyNamesIsSearchedWhole(t *testing.T) {
	s := newStore(t, "crowded")
	for i := range 100 {
		require.NoError(t, os.Mkdir(filepath.Join(s.Dir("crowded"), fmt.Sprintf("a%03d", i)), 0o700))
	}
	appendTo(t, transcript(s, "crowded", theConv), claudeLine("user", "where is the axolotl", 0))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "axolotl"})
	require.Len(t, hits, 1)
	assert.Equal(t, "crowded", hits[0].Session)
}

// twoIndexes is a store of sessions demo and other, each saying wombat once, and two processes' indexes of it: a,
// caught up (its warnings given), and b.
func twoIndexes(t *testing.T) (s *layout.Store, a *Index, warnings *[]string, b *Index) {
	t.Helper()
	s = newStore(t, "demo", "other")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the wombat", 0))
	appendTo(t, transcript(s, "other", theConv), claudeLine("user", "a wombat too", 0))
	a, warnings = openIndex(t, s)
	require.NoError(t, a.CatchUp(nil))
	b, _ = openIndex(t, s)
	return s, a, warnings, b
}

// A search by a process that caught the index up, made after another's --reindex emptied it and before that one
// filled it again, still finds what its catch-up indexed: it catches up again first (CI saw `search` answer
// "no conversation matches" beside a `search --reindex`).
func TestASearchDuringAReindexElsewhereFindsAll(t *testing.T) {
	_, a, warnings, b := twoIndexes(t)

	require.NoError(t, b.reset("")) // b's --reindex has emptied the index, and not yet caught up
	assert.Len(t, search(t, a, Query{Match: "wombat"}), 2)
	require.NoError(t, b.reset(""))
	ids, err := a.SessionIDs(Query{Match: "wombat"})
	require.NoError(t, err)
	assert.Equal(t, []string{"demo", "other"}, sorted(ids))
	require.NoError(t, b.CatchUp(nil)) // b fills it: nothing twice
	assert.Equal(t, 2, entryCount(t, a))
	assert.Empty(t, *warnings)
}

// An index that other processes keep emptying is caught up again a bounded number of times, then answered from
// as it is, with a warning.
func TestASearchOfAnIndexKeptEmptiedEnds(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the wombat", 0))
	a, warnings := openIndex(t, s)
	require.NoError(t, a.CatchUp(nil))
	b, _ := openIndex(t, s)
	resets := 0
	a.caughtUp = func() { resets++; require.NoError(t, b.reset("")) } // after each of a's catch-ups
	require.NoError(t, b.reset(""))
	res, err := a.Search(Query{Match: "wombat"})
	require.NoError(t, err)
	assert.Empty(t, res.Hits)
	assert.Equal(t, maxCatchUps, resets)
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "emptied the index after each of this search's 3 catch-ups")
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// A reset made by another process while this one's catch-up applies what it planned (demo planned as nothing to
// do) leaves it caught up in the generation before: its query catches up again, and finds demo.
func TestAReindexDuringACatchUpIsCaughtUp(t *testing.T) {
	s := newStore(t, "demo", "other")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the wombat", 0))
	appendTo(t, transcript(s, "other", theConv), claudeLine("user", "a wombat too", 0))
	a, warnings := openIndex(t, s)
	require.NoError(t, a.CatchUp(nil))
	appendTo(t, transcript(s, "other", theConv), claudeLine("user", "more", 1))
	b, _ := openIndex(t, s)
	resets := 0
	require.NoError(t, a.CatchUp(func(done, total int) {
		if resets == 0 {
			resets++
			require.NoError(t, b.reset(""))
		}
	}))
	require.Equal(t, 1, resets)
	ids, err := a.SessionIDs(Query{Match: "wombat"})
	require.NoError(t, err)
	assert.Equal(t, []string{"demo", "other"}, sorted(ids))
	assert.Empty(t, *warnings)
}

// A query's generation and its rows are read in one snapshot: a reset committed between them is not seen.
func TestAQueryReadsOneSnapshot(t *testing.T) {
	_, a, _, b := twoIndexes(t)
	n := -1
	require.NoError(t, a.read(func(tx *sql.Tx) error {
		require.NoError(t, b.reset(""))
		return tx.QueryRow(`SELECT count(*) FROM entry`).Scan(&n)
	}))
	assert.Equal(t, 2, n, "the entries as of the generation checked")
}

// A database found damaged by a query is rebuilt in a generation of its own: the query catches up again rather
// than answer from the empty new database.
func TestAQueryOfARebuiltIndexCatchesUp(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the wombat", 0))
	a, warnings := openIndex(t, s)
	require.NoError(t, a.CatchUp(nil))
	require.NoError(t, a.rebuild(errors.New("a damaged page"))) // what retry does on SQLITE_CORRUPT
	assert.Len(t, search(t, a, Query{Match: "wombat"}), 1)
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "a damaged page")
}

// Processes catching up and searching while others reindex, as CLIs do at once: none answers short of what it
// indexed without a warning, none fails, nothing is indexed twice. A race: bounded by runs, not time.
func TestSearchesBesideReindexesAnswerInFull(t *testing.T) {
	const sessions, runs = 8, 25 // runs a worker
	s := zebraStore(t, sessions, 2, 10)
	var short, warned, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range runs {
				var warnings atomic.Int64
				ix, err := Open(s, func(string) { warnings.Add(1) })
				if err != nil {
					failed.Add(1)
					continue
				}
				if w%2 == 1 {
					err = ix.Reindex(nil)
				} else {
					err = ix.CatchUp(nil)
				}
				var got []string
				if err == nil {
					got, err = ix.SessionIDs(Query{Match: "zebra"})
				}
				switch {
				case err != nil:
					failed.Add(1)
				case warnings.Load() > 0:
					warned.Add(1)
				case len(got) != sessions:
					short.Add(1)
				}
				ix.Close()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d runs: %d short, %d warned, %d failed", 4*runs, short.Load(), warned.Load(), failed.Load())
	assert.Zero(t, short.Load())
	assert.Zero(t, failed.Load())
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	assert.Equal(t, sessions*2*10, entryCount(t, ix))
}

package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/search/searchtest"
)

// partsLine is a Claude assistant line run in cwd whose message holds one text part for each of words.
func partsLine(cwd string, n int, words []string) string {
	parts := make([]map[string]string, len(words))
	for i, w := range words {
		parts[i] = map[string]string{"type": "text", "text": w}
	}
	b, _ := json.Marshal(map[string]any{"type": "assistant", "sessionId": theConv, "cwd": cwd,
		"timestamp": at.Add(time.Duration(n) * time.Minute).Format(time.RFC3339),
		"message":   map[string]any{"role": "assistant", "content": parts}})
	return string(b) + "\n"
}

func wordsOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// dbBytes is the index's database on disk, its log checkpointed into it.
func dbBytes(t *testing.T, ix *Index) int64 {
	t.Helper()
	_, err := ix.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	require.NoError(t, err)
	var n int64
	for _, name := range []string{DBName, DBName + "-wal"} {
		if st, err := os.Stat(filepath.Join(ix.store.Root, Dir, name)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// costs are the index's sums: the store's (meta), each session's (sess), and what its conversations hold.
func costs(t *testing.T, ix *Index) (store int64, sess, convs map[string]int64) {
	t.Helper()
	require.NoError(t, ix.db.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'cost'`).Scan(&store))
	sess, convs = map[string]int64{}, map[string]int64{}
	for q, m := range map[string]map[string]int64{`SELECT session, cost FROM sess`: sess,
		`SELECT session, sum(cost) FROM conv GROUP BY session`: convs} {
		rs, err := ix.db.Query(q)
		require.NoError(t, err)
		for rs.Next() {
			var id string
			var c int64
			require.NoError(t, rs.Scan(&id, &c))
			if c != 0 {
				m[id] = c
			}
		}
		require.NoError(t, rs.Close())
	}
	return store, sess, convs
}

// assertSums checks the store's and each session's sums are their conversations'.
func assertSums(t *testing.T, ix *Index) int64 {
	t.Helper()
	store, sess, convs := costs(t, ix)
	assert.Equal(t, convs, sess, "each session's cost is its conversations'")
	total := int64(0)
	for _, c := range convs {
		total += c
	}
	assert.Equal(t, total, store, "the store's cost is its sessions'")
	return store
}

// TestIndexSizeWithinItsCost: the database holds at most indexPerCost times what its rows cost plus indexFixed, for
// what a hostile session writes (issue 49, finding 4: a 4,000-byte cwd on lines of 20,000 one-word parts; lines of
// perLine one-letter parts; a new 4,000-byte cwd each line) and for ordinary conversations; and a session's cost is
// within a few times the bytes it wrote.
func TestIndexSizeWithinItsCost(t *testing.T) {
	longCwd := "/" + strings.Repeat("d", 3999)
	cases := map[string]func(t *testing.T, s *layout.Store) int64{
		"finding 4": func(t *testing.T, s *layout.Store) int64 {
			var lines []string
			for l := range 5 {
				lines = append(lines, partsLine(longCwd, l, wordsOf(fmt.Sprintf("w%dx", l), 20000)))
			}
			appendTo(t, transcript(s, "demo", theConv), lines...)
			return int64(len(strings.Join(lines, "")))
		},
		"perLine tiny parts a line": func(t *testing.T, s *layout.Store) int64 {
			var lines []string
			for l := range 5000 {
				lines = append(lines, partsLine("/w", l, strings.Split(strings.Repeat("ab", perLine), "")))
			}
			appendTo(t, transcript(s, "demo", theConv), lines...)
			return int64(len(strings.Join(lines, "")))
		},
		"a new long cwd a line": func(t *testing.T, s *layout.Store) int64 {
			var lines []string
			for l := range 2000 {
				lines = append(lines, partsLine(fmt.Sprintf("%s%d", longCwd[:3990], l), l, []string{"x"}))
			}
			appendTo(t, transcript(s, "demo", theConv), lines...)
			return int64(len(strings.Join(lines, "")))
		},
		"ordinary": func(t *testing.T, s *layout.Store) int64 {
			made, err := searchtest.Make(s.Root, 40, 40, 64<<10)
			require.NoError(t, err)
			return made.Bytes
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, "demo")
			wrote := write(t, s)
			ix, _ := openIndex(t, s)
			require.NoError(t, ix.CatchUp(nil))
			cost := assertSums(t, ix)
			size := dbBytes(t, ix)
			t.Logf("wrote %d bytes; cost %d; index %d bytes: %.2f times the cost (past indexFixed), %.2f times what was written",
				wrote, cost, size, float64(size-indexFixed)/float64(cost), float64(size)/float64(wrote))
			assert.LessOrEqual(t, size, indexPerCost*cost+indexFixed)
			assert.LessOrEqual(t, cost, 3*wrote, "the cost is of the order of what the session wrote")
		})
	}
}

// TestALinesPartsAreMerged: past a line's first perLine entries, its entries are merged into rows of up to
// mergeText bytes; its cwd is kept once; every word is still found, as the part it was.
func TestALinesPartsAreMerged(t *testing.T) {
	s := newStore(t, "demo")
	cwd := "/" + strings.Repeat("d", 3999)
	appendTo(t, transcript(s, "demo", theConv), partsLine(cwd, 0, wordsOf("w", 20000)), claudeLine("user", "three parts next", 1),
		partsLine("/w", 2, []string{"alpha one", "beta two", "gamma three"}))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	rows := entryCount(t, ix)
	assert.LessOrEqual(t, rows, perLine+1+20000*7/mergeText+2+1+3, "a row a part: %d", rows)
	var cwds int
	require.NoError(t, ix.db.QueryRow(`SELECT count(*) FROM str WHERE s = ?`, cwd).Scan(&cwds))
	assert.Equal(t, 1, cwds, "the cwd once")
	for _, w := range []string{"w0", "w15", "w16", "w12345", "w19999"} {
		hits := search(t, ix, Query{Match: w})
		require.Len(t, hits, 1, w)
		assert.Equal(t, cwd, hits[0].Cwd)
		assert.Equal(t, "reply", hits[0].Kind)
		assert.Contains(t, strings.Fields(hits[0].Snippet), w)
	}
	assert.Equal(t, "w3", search(t, ix, Query{Match: "w3"})[0].Snippet, "a line's first parts are a row each")
	// A line of a few parts: a row each, as before.
	for _, w := range []string{"alpha", "beta", "gamma"} {
		hits := search(t, ix, Query{Match: w})
		require.Len(t, hits, 1)
		assert.Equal(t, strings.Fields(hits[0].Snippet)[0], w)
		assert.Len(t, strings.Fields(hits[0].Snippet), 2)
	}
}

// TestOrdinaryConversationsAreIndexedAsRead: every entry agents/text reads of ordinary conversations (each
// agent's real files, a Claude conversation with a subagent) is a row of its own, with its time, cwd, kind, tool,
// subagent and offset: merging, the strings table and reading subagents file by file change nothing for them.
func TestOrdinaryConversationsAreIndexedAsRead(t *testing.T) {
	s := newStore(t, "demo")
	root := s.Dir("demo")
	require.NoError(t, os.CopyFS(root, os.DirFS("../agents/testdata/session")))
	canon := filepath.Join(root, layout.ProjectsDir, layout.CanonicalProject)
	require.NoError(t, os.CopyFS(canon, os.DirFS("../agents/claude/testdata/projects/-tmp-wd")))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))

	type rowOf struct {
		Agent, Conv, Text, Cwd, Kind, Tool, Sub string
		At, Off                                 int64
	}
	var want []rowOf
	sess, err := s.OpenSession("demo")
	require.NoError(t, err)
	defer sess.Close()
	l := list(sess)
	for _, src := range l.sources {
		require.NoError(t, text.Entries(sess, src.agent, src.conv, func(e text.Entry) error {
			if e.Text != "" {
				at := int64(0)
				if !e.Time.IsZero() {
					at = e.Time.UnixMilli()
				}
				want = append(want, rowOf{src.agent.Name, src.conv.ID, e.Text, e.Cwd, e.Kind.String(), e.Tool, e.Subagent, at, e.Offset})
			}
			return nil
		}))
	}
	rs, err := ix.db.Query(`SELECT c.agent, c.conv, e.text, coalesce(sc.s, ''), e.kind, coalesce(st.s, ''), coalesce(ss.s, ''),
		e.at, e.off FROM entry e JOIN conv c ON c.id = (e.rowid >> 32)` + strJoins)
	require.NoError(t, err)
	var got []rowOf
	for rs.Next() {
		var r rowOf
		var kind int
		require.NoError(t, rs.Scan(&r.Agent, &r.Conv, &r.Text, &r.Cwd, &kind, &r.Tool, &r.Sub, &r.At, &r.Off))
		r.Kind = text.Kind(kind).String()
		got = append(got, r)
	}
	require.NoError(t, rs.Close())
	less := func(rs []rowOf) func(i, j int) bool {
		return func(i, j int) bool { return fmt.Sprint(rs[i]) < fmt.Sprint(rs[j]) }
	}
	sort.Slice(want, less(want))
	sort.Slice(got, less(got))
	require.NotEmpty(t, want)
	assert.Equal(t, want, got)
	subs := 0
	for _, r := range got {
		if r.Sub != "" {
			subs++
		}
	}
	assert.NotZero(t, subs, "a subagent's entries are among them")
}

// TestReadsOneFileAtATime pins what the index's reading of a Claude file alone rests on: a conversation read under
// the id noSubagents reads its transcript, none of its subagents'.
func TestReadsOneFileAtATime(t *testing.T) {
	s := newStore(t, "demo")
	canon := filepath.Join(s.Dir("demo"), layout.ProjectsDir, layout.CanonicalProject)
	require.NoError(t, os.CopyFS(canon, os.DirFS("../agents/claude/testdata/projects/-tmp-wd")))
	sess, err := s.OpenSession("demo")
	require.NoError(t, err)
	defer sess.Close()
	l := list(sess)
	var src *source
	for i := range l.sources {
		if len(l.sources[i].subs) > 0 {
			src = &l.sources[i]
		}
	}
	require.NotNil(t, src, "a conversation with a subagent")
	whole, alone := 0, 0
	require.NoError(t, text.Entries(sess, claude.Agent, src.conv, func(e text.Entry) error {
		if e.Subagent != "" {
			whole++
		}
		return nil
	}))
	c := src.conv
	c.ID = noSubagents
	require.NoError(t, text.Entries(sess, claude.Agent, c, func(e text.Entry) error {
		if e.Subagent != "" {
			alone++
		}
		return nil
	}))
	assert.NotZero(t, whole)
	assert.Zero(t, alone, "a subagent's file was read")
}

// TestEachInodeIsReadOnce: hard links of a subagent's transcript in its folder, and of a conversation's transcript
// as other conversations, are read and indexed once (issue 49, findings 4 and 5).
func TestEachInodeIsReadOnce(t *testing.T) {
	s := newStore(t, "demo")
	canon := filepath.Join(s.Dir("demo"), layout.ProjectsDir, layout.CanonicalProject)
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the main kinkajou", 0))
	subs := filepath.Join(canon, theConv, "subagents")
	appendTo(t, filepath.Join(subs, "agent-a000.jsonl"), claudeLine("user", "the sub's kinkajou", 1))
	for i := 1; i <= 50; i++ {
		require.NoError(t, os.Link(filepath.Join(subs, "agent-a000.jsonl"), filepath.Join(subs, fmt.Sprintf("agent-a%03d.jsonl", i))))
	}
	for i := 2; i <= 20; i++ {
		require.NoError(t, os.Link(transcript(s, "demo", theConv), transcript(s, "demo", fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i))))
	}
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "kinkajou"})
	require.Len(t, hits, 2, "%+v", hits)
	for _, h := range hits {
		assert.Equal(t, theConv, h.Conversation)
	}
	assert.Equal(t, 2, entryCount(t, ix))
	var read int64
	require.NoError(t, ix.db.QueryRow(`SELECT read FROM sess WHERE session = 'demo'`).Scan(&read))
	st1, _ := os.Stat(transcript(s, "demo", theConv))
	st2, _ := os.Stat(filepath.Join(subs, "agent-a000.jsonl"))
	assert.Equal(t, st1.Size()+st2.Size(), read, "each file's bytes counted once")

	// The first name gone, the next one is read: nothing is lost.
	require.NoError(t, os.Remove(filepath.Join(subs, "agent-a000.jsonl")))
	require.NoError(t, ix.CatchUp(nil))
	hits = search(t, ix, Query{Match: `"sub's kinkajou"`})
	require.Len(t, hits, 1)
	assert.Equal(t, "a001", hits[0].Subagent)
	assertSums(t, ix)
}

// TestASessionOverItsBudgetIsCut: a session whose text costs more than maxSessionCost is indexed up to it, its
// conversation marked cut, and search says so; another session is indexed whole; the cut session is not read again
// until it changes, and the sums stay right through appends, rewrites and removals.
func TestASessionOverItsBudgetIsCut(t *testing.T) {
	defer func(c int64) { maxSessionCost = c }(maxSessionCost)
	maxSessionCost = 256 << 10
	s := newStore(t, "big", "small")
	var lines []string
	for i := range 4000 {
		lines = append(lines, claudeLine("user", fmt.Sprintf("tapir number %d of a long tale, %s", i, strings.Repeat("and on ", 10)), i))
	}
	appendTo(t, transcript(s, "big", theConv), lines...)
	appendTo(t, transcript(s, "small", theConv), claudeLine("user", "a tapir of the small one", 0))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	_, sess, _ := costs(t, ix)
	assert.LessOrEqual(t, sess["big"], maxSessionCost)
	assert.Greater(t, sess["big"], maxSessionCost*9/10, "indexed up to its budget")
	assert.Len(t, search(t, ix, Query{Match: `"tapir number 0"`}), 1, "what it said first is found")
	assert.Empty(t, search(t, ix, Query{Match: `"tapir number 3999"`}), "past the budget it is not")
	assert.Len(t, search(t, ix, Query{Match: "small", Sessions: []string{"small"}}), 1)
	parts, err := ix.Partial(nil)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, Partial{Session: "big", Conversations: 1, Why: "its session's index budget (256 KiB) is spent"}, parts[0])
	assertSums(t, ix)

	var out strings.Builder
	var warned []string
	require.NoError(t, Run(&out, s, Options{Query: Query{Match: "tapir"}, Warn: func(m string) { warned = append(warned, m) }}))
	assert.Contains(t, strings.Join(warned, "\n"), "session big is indexed in part (a conversation: its session's index budget (256 KiB) is spent): what it said past that is not found")
	warned = nil
	require.NoError(t, Run(&out, s, Options{Query: Query{Match: "tapir", Sessions: []string{"small"}}, Warn: func(m string) { warned = append(warned, m) }}))
	assert.Empty(t, warned, "a search of the other session says nothing of it")

	before := inserted.Load()
	appendTo(t, transcript(s, "big", theConv), claudeLine("user", "a late tapir", 5000))
	require.NoError(t, ix.CatchUp(nil))
	assert.Zero(t, inserted.Load()-before, "a cut conversation's appends are not read")
	appendTo(t, transcript(s, "big", "c0ffee00-0000-4000-8000-000000000002"), claudeLine("user", "another tapir", 0))
	require.NoError(t, ix.CatchUp(nil))
	assert.Empty(t, search(t, ix, Query{Match: "another"}), "the session's budget is spent")
	assertSums(t, ix)

	require.NoError(t, os.Remove(transcript(s, "big", theConv)))
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "another"}), 0, "a cut conversation waits for its file to change")
	appendTo(t, transcript(s, "big", "c0ffee00-0000-4000-8000-000000000002"), claudeLine("user", "and again", 1))
	require.NoError(t, os.WriteFile(transcript(s, "big", "c0ffee00-0000-4000-8000-000000000002"), []byte(claudeLine("user", "another tapir rewritten", 0)), 0o600))
	require.NoError(t, ix.CatchUp(nil))
	assert.Len(t, search(t, ix, Query{Match: "rewritten"}), 1, "rewritten, within the budget freed")
	parts, err = ix.Partial(nil)
	require.NoError(t, err)
	assert.Empty(t, parts)
	assertSums(t, ix)
	require.NoError(t, os.RemoveAll(s.Dir("big")))
	require.NoError(t, ix.CatchUp(nil))
	store, sessions, _ := costs(t, ix)
	assert.Equal(t, sessions["small"], store, "a session gone leaves nothing in the sums")
}

// TestTheStoreBudget: past maxStoreCost the sessions indexed next are cut, saying the store's index is full.
func TestTheStoreBudget(t *testing.T) {
	defer func(c int64) { maxStoreCost = c }(maxStoreCost)
	s := newStore(t, "s1", "s2")
	for _, id := range []string{"s1", "s2"} {
		var lines []string
		for i := range 1000 {
			lines = append(lines, claudeLine("user", fmt.Sprintf("%s says okapi %d", id, i), i))
		}
		appendTo(t, transcript(s, id, theConv), lines...)
	}
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.Update("s1"))
	maxStoreCost = assertSums(t, ix) + 4<<10
	require.NoError(t, ix.CatchUp(nil))
	assert.LessOrEqual(t, assertSums(t, ix), maxStoreCost)
	parts, err := ix.Partial(nil)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, "s2", parts[0].Session)
	assert.Equal(t, "the store's index is full (8 GiB)", strings.Replace(parts[0].Why, bytesOf(maxStoreCost), "8 GiB", 1))
	assert.Len(t, search(t, ix, Query{Match: `"s1 says okapi 999"`}), 1)
	assert.Empty(t, search(t, ix, Query{Match: `"s2 says okapi 999"`}))
}

// TestASessionsReadBudget: a session's files are read maxSessionRead bytes at most in all, each conversation's and
// subagent's counted: past it, a conversation is cut.
func TestASessionsReadBudget(t *testing.T) {
	defer func(r int64) { maxSessionRead = r }(maxSessionRead)
	maxSessionRead = 64 << 10
	s := newStore(t, "demo")
	line := claudeLine("user", "a quokka "+strings.Repeat("hop ", 100), 0)
	var lines []string
	for range (40 << 10) / len(line) {
		lines = append(lines, line)
	}
	appendTo(t, transcript(s, "demo", "c0ffee00-0000-4000-8000-00000000000a"), lines...)
	appendTo(t, transcript(s, "demo", "c0ffee00-0000-4000-8000-00000000000b"), lines...)
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	var read int64
	require.NoError(t, ix.db.QueryRow(`SELECT read FROM sess WHERE session = 'demo'`).Scan(&read))
	assert.LessOrEqual(t, read, maxSessionRead)
	parts, err := ix.Partial(nil)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, "its session's files past 64 KiB in all are not read", parts[0].Why)
	ids, err := ix.SessionIDs(Query{Match: "quokka"})
	require.NoError(t, err)
	assert.Equal(t, []string{"demo"}, ids)
}

// TestAnOldIndexIsRebuilt: an index of the version before (3: a cwd in every row) is rebuilt, with a warning, and
// gives its pages back to the disk.
func TestAnOldIndexIsRebuilt(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), claudeLine("user", "the old numbat", 0))
	ix, _ := openIndex(t, s)
	require.NoError(t, ix.CatchUp(nil))
	// Made the version before: its tables as they were, grown as a session grew them.
	for _, q := range []string{`DROP TABLE entry`, `DROP TABLE conv`, `DROP TABLE sess`, `DROP TABLE str`,
		`CREATE TABLE conv(id INTEGER PRIMARY KEY, session TEXT NOT NULL, agent TEXT NOT NULL, src TEXT NOT NULL,
			conv TEXT NOT NULL, size INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL, sig TEXT NOT NULL,
			done INTEGER NOT NULL, tail BLOB, next INTEGER NOT NULL, UNIQUE(session, agent, src))`,
		`CREATE TABLE sess(session TEXT PRIMARY KEY, sig TEXT NOT NULL) WITHOUT ROWID`,
		`CREATE VIRTUAL TABLE entry USING fts5(text, at UNINDEXED, cwd UNINDEXED, kind UNINDEXED, off UNINDEXED,
			tool UNINDEXED, sub UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')`,
		`UPDATE meta SET value = '3' WHERE key = 'schema'`, `DELETE FROM meta WHERE key = 'cost'`} {
		_, err := ix.db.Exec(q)
		require.NoError(t, err, q)
	}
	cwd := strings.Repeat("d", 4000)
	for i := range 5000 {
		_, err := ix.db.Exec(`INSERT INTO entry(rowid, text, at, cwd, kind, off, tool, sub) VALUES(?, 'w', 0, ?, 'reply', 0, '', '')`, i+1, cwd)
		require.NoError(t, err)
	}
	grown := dbBytes(t, ix)
	require.Greater(t, grown, int64(16<<20))
	ix.Close()

	ix, warnings := openIndex(t, s)
	require.Len(t, *warnings, 1)
	assert.Contains(t, (*warnings)[0], "is of another version (3): rebuilding it")
	assert.Less(t, dbBytes(t, ix), int64(1<<20), "the old index's pages went back to the disk (it was %d bytes)", grown)
	require.NoError(t, ix.CatchUp(nil))
	hits := search(t, ix, Query{Match: "numbat"})
	require.Len(t, hits, 1)
	assert.Equal(t, "/session/workspace", hits[0].Cwd)
	assert.Equal(t, "prompt", hits[0].Kind)
	assertSums(t, ix)
}

// TestIndexFailureIsNoReadError: a row the index fails to write is the index's failure, returned as SQLite said it
// (a damaged database is rebuilt on it), not a conversation left out for now as if its file could not be read.
func TestIndexFailureIsNoReadError(t *testing.T) {
	s := newStore(t, "demo")
	appendTo(t, transcript(s, "demo", theConv), partsLine("/w", 0, []string{"walrus"}), partsLine("/w", 1, []string{"narwhal"}))
	ix, _ := openIndex(t, s)
	sess, err := s.OpenSession("demo")
	require.NoError(t, err)
	defer sess.Close()
	l := list(sess)
	require.Len(t, l.sources, 1)
	tx, err := ix.db.Begin()
	require.NoError(t, err)
	defer tx.Rollback()
	// The rowid of the conversation's first entry is taken: its insert fails.
	_, err = tx.Exec(`INSERT INTO entry(rowid, text) VALUES(?, 'taken')`, int64(1)<<convShift)
	require.NoError(t, err)
	err = index(tx, sess, "demo", &l.sources[0], nil)
	require.Error(t, err)
	assert.False(t, errors.As(err, new(readError)), "the index's failure was taken for an unreadable file: %v", err)
}

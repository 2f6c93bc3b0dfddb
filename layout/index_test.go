package layout

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testIndexer counts the canonical folder's transcripts and names the projects folders, as the agents' indexer
// does Claude's.
func testIndexer(sess *Dir) ConversationIndex {
	c := ConversationIndex{ByAgent: map[string]int{}, Rels: []string{ProjectsDir, ProjectsDir + "/" + CanonicalProject}}
	folders, _ := sess.ReadDir(ProjectsDir)
	for _, f := range folders {
		if f.IsDir() && f.Name() != CanonicalProject {
			c.Rels = append(c.Rels, ProjectsDir+"/"+f.Name())
		}
	}
	ents, _ := sess.ReadDir(ProjectsDir + "/" + CanonicalProject)
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() {
			c.IDs = append(c.IDs, id)
		}
	}
	if len(c.IDs) > 0 {
		c.ByAgent["claude"] = len(c.IDs)
	}
	return c
}

func withTestIndexer(t *testing.T) {
	prev := conversationIndexer()
	RegisterConversationIndexer(testIndexer)
	t.Cleanup(func() { RegisterConversationIndexer(prev) })
}

// indexed lists the store and returns its sessions by id.
func indexed(t *testing.T, s *Store) map[string]Listed {
	t.Helper()
	list, err := s.Listing(false)
	require.NoError(t, err)
	out := map[string]Listed{}
	for _, l := range list {
		out[l.ID] = l
	}
	return out
}

// indexLines are the ids of the index file's records.
func indexLines(t *testing.T, s *Store) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Root, indexFile))
	require.NoError(t, err)
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[1:] {
		id, _, _ := strings.Cut(line, "\t")
		ids = append(ids, id)
	}
	return ids
}

// settle takes the racy flag off the index's records, as the window's passing would: a test then sees whether
// a change behind the index is found by its fingerprint alone.
func settle(t *testing.T, s *Store) {
	t.Helper()
	path := filepath.Join(s.Root, indexFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "\tcr\t", "\tc\t")), 0o644))
}

func TestIndexSeesChangesBehindIt(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	for _, id := range []string{"a", "b", "c", "f"} {
		_, err := s.Create(id, CreateOptions{Labels: map[string]string{"team": "web"}})
		require.NoError(t, err)
	}
	got := indexed(t, s)
	require.Len(t, got, 4)
	assert.Equal(t, []string{"a", "b", "c", "f"}, indexLines(t, s), "the first reader builds the index")
	assert.Equal(t, "web", got["a"].Labels["team"])
	settle(t, s)

	// A second host (or an older sessionfs) adds, removes and renames sessions, and edits one, writing the store
	// only: no index update.
	d := filepath.Join(s.SessionsDir(), "d")
	require.NoError(t, os.MkdirAll(filepath.Join(d, ProjectsDir, CanonicalProject), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(d, MetaFile), []byte(`{"id":"d","labels":{"team":"cli"}}`), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(s.SessionsDir(), "b")))
	require.NoError(t, os.Rename(filepath.Join(s.SessionsDir(), "c"), filepath.Join(s.SessionsDir(), "c2")))
	meta := filepath.Join(s.SessionsDir(), "a", MetaFile)
	b, err := os.ReadFile(meta)
	require.NoError(t, err)
	edited := strings.Replace(string(b), `"web"`, `"ops"`, 1) // same size, written in place
	require.Len(t, edited, len(b))
	f, err := os.OpenFile(meta, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(edited), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	canon := filepath.Join(s.SessionsDir(), "f", ProjectsDir, CanonicalProject)
	require.NoError(t, os.WriteFile(filepath.Join(canon, "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), []byte("{}\n"), 0o600))

	got = indexed(t, s)
	assert.ElementsMatch(t, []string{"a", "c2", "d", "f"}, keys(got))
	assert.Equal(t, "ops", got["a"].Labels["team"], "session.json changed in place")
	assert.Equal(t, "cli", got["d"].Labels["team"], "a session made behind the index")
	assert.Equal(t, "web", got["c2"].Labels["team"], "a session renamed behind the index")
	assert.Equal(t, map[string]int{"claude": 1}, got["f"].Agents, "a conversation made behind the index")
	assert.Equal(t, []string{"a", "c2", "d", "f"}, indexLines(t, s), "the index is fixed up: b gone, c renamed")
	cands, err := s.ConversationCandidates(func(c string) bool { return c == "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01" })
	require.NoError(t, err)
	assert.Equal(t, []string{"f"}, cands)

	// Through the store, the index follows each change at once.
	_, err = s.Remove("a")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c2", "d", "f"}, indexLines(t, s), "rm leaves its record to the next reader")
	assert.ElementsMatch(t, []string{"c2", "d", "f"}, keys(indexed(t, s)), "who drops it")
	assert.Equal(t, []string{"c2", "d", "f"}, indexLines(t, s))
	require.NoError(t, s.Rename("d", "e"))
	assert.Equal(t, []string{"c2", "e", "f"}, indexLines(t, s), "rename")
	_, err = s.RestoreSession("a")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c2", "e", "f"}, indexLines(t, s), "restore")
}

// What a reader finds fresh is what List says: the same metadata, damage and size.
func TestIndexListsAsListDoes(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("good", CreateOptions{Labels: map[string]string{"k": "v"}})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(s.SessionsDir(), "damaged", "workspace"), 0o755))
	want, err := s.List()
	require.NoError(t, err)
	for round := range 2 { // built, then read back
		got, err := s.Listing(false)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].ID, got[i].ID, "round %d", round)
			assert.Equal(t, want[i].Labels, got[i].Labels)
			assert.True(t, want[i].Created.Equal(got[i].Created))
			assert.Equal(t, want[i].Damaged, got[i].Damaged)
			assert.Equal(t, want[i].Size, got[i].Size)
			assert.Equal(t, want[i].Dir, got[i].Dir)
		}
	}
}

// A corrupt or hostile index file is never trusted: its records that do not parse are dropped, its ids and
// names checked, a record of a session that is not there is not listed, and the file is rebuilt.
func TestIndexCorruptOrHostileFile(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("a", CreateOptions{})
	require.NoError(t, err)
	path := filepath.Join(s.Root, indexFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	body := `{"meta":{"id":"x","labels":{"owned":"yes"}},"size":1}`
	for name, content := range map[string]string{
		"garbage":       "\x00\xff{not an index",
		"other version": "sessionfs-index 999\na\t-\tc\t.\t\t" + body + "\n",
		"hostile lines": indexHeader + "\n" +
			"../../etc\t-\tc\t.\t\t" + body + "\n" + // not an id
			"a\t00000000000000010000000000000001\tc\t../../etc/passwd\t\t" + body + "\n" + // a name that leaves the session
			"a\t80000000000000018000000000000001\tc\t. session.json\t\t" + body + "\n" + // a forged record: not its fingerprint
			"ghost\t-\tc\t.\t\t" + body + "\n" + // no such session
			"a\tnot-hex\n",
	} {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644), name)
		got := indexed(t, s)
		assert.Equal(t, []string{"a"}, keys(got), name)
		assert.Empty(t, got["a"].Labels, "%s: the forged labels are not believed", name)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), indexHeader+"\na\t"), "%s: rebuilt: %q", name, b)
		assert.NotContains(t, string(b), "ghost", name)
	}
	// A symlink where the index is is replaced, never followed.
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(outside, path))
	_, err = s.Create("b", CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, keys(indexed(t, s)))
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
}

// Two writers at once (two Stores of one root: two processes' descriptors and flocks) never lose each other's
// records.
func TestIndexConcurrentWriters(t *testing.T) {
	withTestIndexer(t)
	root := t.TempDir()
	s1, err := OpenStore(root)
	require.NoError(t, err)
	defer s1.Close()
	s2, err := OpenStore(root)
	require.NoError(t, err)
	defer s2.Close()
	_, err = s1.Listing(false) // the index exists: every Create below updates it
	require.NoError(t, err)
	const each = 20
	var wg sync.WaitGroup
	for w, s := range []*Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := s.Create(fmt.Sprintf("w%d-%02d", w, i), CreateOptions{})
				assert.NoError(t, err)
				if i%5 == 0 {
					_, err = s.Listing(false)
					assert.NoError(t, err)
				}
			}
		}()
	}
	wg.Wait()
	assert.Len(t, indexLines(t, s1), 2*each, "every writer's records are in the file")
	assert.Len(t, indexed(t, s2), 2*each)
}

// A record made while its names had just changed is marked racy and rescanned by the next reader, so a change
// in the same clock tick as the fingerprint is not missed.
func TestIndexRacyRecordRescanned(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("a", CreateOptions{})
	require.NoError(t, err)
	_, err = s.Listing(false)
	require.NoError(t, err)
	recs, release, err := s.readIndex()
	defer release()
	require.NoError(t, err)
	assert.True(t, recs["a"].has(flagRacy), "made within the window")
	settle(t, s)
	recs, release, err = s.readIndex()
	defer release()
	require.NoError(t, err)
	require.False(t, recs["a"].has(flagRacy))
	sessions, err := s.Sessions()
	require.NoError(t, err)
	r := recs["a"]
	fresh, changed := r.fresh(sessions, time.Now(), true, true)
	assert.True(t, fresh, "settled: trusted")
	assert.False(t, changed)
}

func keys(m map[string]Listed) []string { return slices.Sorted(maps.Keys(m)) }

// What a session writes is data to the index, never a way out: a symlink planted where a conversation folder was
// is not walked by the fingerprint nor the scan, names that are no plain path make the session rescanned on
// every read (its own cost) rather than stored, and a session of more conversations than a record keeps is a
// candidate of every find.
func TestIndexHostileSession(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("evil", CreateOptions{})
	require.NoError(t, err)
	_, err = s.Listing(false)
	require.NoError(t, err)
	sessions, err := s.Sessions()
	require.NoError(t, err)

	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(outside, CanonicalProject), 0o755))
	projects := filepath.Join(s.SessionsDir(), "evil", ProjectsDir)
	require.NoError(t, os.RemoveAll(projects))
	require.NoError(t, os.Symlink(outside, projects))
	rels := ". " + MetaFile + " " + ProjectsDir + " " + ProjectsDir + "/" + CanonicalProject
	before, _ := fingerprint(sessions, "evil", rels, time.Now(), true)
	require.NoError(t, os.WriteFile(filepath.Join(outside, CanonicalProject, "x.jsonl"), []byte("{}\n"), 0o600))
	after, _ := fingerprint(sessions, "evil", rels, time.Now(), true)
	assert.Equal(t, before, after, "the fingerprint stats nothing through the planted link")
	got := indexed(t, s)
	assert.Empty(t, got["evil"].Agents, "the scan reads nothing through it")

	require.NoError(t, os.Remove(projects))
	require.NoError(t, os.MkdirAll(filepath.Join(projects, "a b\nc"), 0o755))
	ids, recs, release, err := s.loadIndex(false, true)
	defer release()
	require.NoError(t, err)
	evil, ok := slices.BinarySearch(ids, "evil")
	require.True(t, ok)
	assert.Equal(t, "-", recs[evil].fp, "a name with a space and a newline: not kept, rescanned every time")
	assert.Equal(t, ". "+MetaFile, recs[evil].rels)

	canon := filepath.Join(projects, CanonicalProject)
	require.NoError(t, os.MkdirAll(canon, 0o755))
	require.NoError(t, os.RemoveAll(filepath.Join(projects, "a b\nc")))
	for i := range maxRecordConvs + 1 {
		require.NoError(t, os.WriteFile(filepath.Join(canon, fmt.Sprintf("c%04d.jsonl", i)), nil, 0o600))
	}
	cands, err := s.ConversationCandidates(func(string) bool { return false })
	require.NoError(t, err)
	assert.Equal(t, []string{"evil"}, cands, "too many to keep: looked in by every find")
	assert.Equal(t, map[string]int{"claude": maxRecordConvs + 1}, indexed(t, s)["evil"].Agents)
}

// A size measured longer than sizeMaxAge ago is measured again by the next listing.
func TestIndexOldSizesRefreshed(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("a", CreateOptions{})
	require.NoError(t, err)
	before := indexed(t, s)["a"].Size
	settle(t, s)
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir("a"), WorkspaceDir, "big"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, before, indexed(t, s)["a"].Size, "measured a moment ago: kept")

	path := filepath.Join(s.Root, indexFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	old := time.Now().Add(-2 * sizeMaxAge).UTC().Format(time.RFC3339Nano)
	aged := regexp.MustCompile(`"sized_at":"[^"]*"`).ReplaceAllString(string(raw), `"sized_at":"`+old+`"`)
	require.NoError(t, os.WriteFile(path, []byte(aged), 0o644))
	assert.Greater(t, indexed(t, s)["a"].Size, before+(1<<19), "measured long ago: measured again")
	raw, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), old, "and kept")
}

// validIndexID is ValidateID, without its regexp.
func TestValidIndexIDIsValidateID(t *testing.T) {
	cases := []string{"", "a", "A.b_c-d", ".a", "-a", "_a", "a/b", "..", "a b", "a\n", "é", strings.Repeat("x", MaxIDLen),
		strings.Repeat("x", MaxIDLen+1), "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01", "ses_01", "a..b"}
	for c := range 256 {
		cases = append(cases, "a"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, id := range cases {
		assert.Equal(t, ValidateID(id) == nil, validIndexID(id), "%q", id)
	}
}

// An index written by root (a daemon) is owned as the store's root is, so the store's owner can rewrite it.
func TestIndexOwnedAsTheStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files another owner")
	}
	withTestIndexer(t)
	root := t.TempDir()
	require.NoError(t, os.Chown(root, 65534, 65534))
	s, err := OpenStore(root)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Create("a", CreateOptions{})
	require.NoError(t, err)
	_, err = s.Listing(false)
	require.NoError(t, err)
	for _, rel := range []string{indexName, indexFile, indexLock} {
		st, err := os.Stat(filepath.Join(root, rel))
		require.NoError(t, err)
		assert.Equal(t, uint32(65534), st.Sys().(*syscall.Stat_t).Uid, rel)
	}
}

// A session too large to cache (a session.json of kilobytes of cwds) is listed whole all the same, rescanned on
// each read; the file keeps only its size.
func TestIndexSessionTooLargeToCache(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("big", CreateOptions{Labels: map[string]string{"team": "web"}})
	require.NoError(t, err)
	_, err = s.Update("big", func(m *Meta) error {
		for i := range 100 {
			m.AddCwd(fmt.Sprintf("/%d/%s", i, strings.Repeat("x", 1000)))
		}
		return nil
	})
	require.NoError(t, err)
	for round := range 2 {
		got := indexed(t, s)["big"]
		assert.Equal(t, "web", got.Labels["team"], "round %d", round)
		assert.Len(t, got.Cwds, 100)
		assert.NotZero(t, got.Size)
	}
	recs, release, err := s.readIndex()
	defer release()
	require.NoError(t, err)
	assert.Equal(t, "-", recs["big"].fp)
	assert.Less(t, len(recs["big"].body), 200, "the file keeps its size alone")
}

// An index of more than its limit keeps every session, those that do not fit as ids alone (rescanned on every
// read), so it is never too large to read back.
func TestIndexEncodedWithinItsLimit(t *testing.T) {
	body := `{"meta":{"labels":{"k":"` + strings.Repeat("v", 1000) + `"}}}`
	recs := map[string]indexRecord{}
	for i := range 100 {
		id := fmt.Sprintf("s%03d", i)
		recs[id] = indexRecord{id: id, fp: strings.Repeat("a", 2*fpHalf), flags: "c", rels: baseRelsWords, convs: "x1", body: body}
	}
	b := encodeIndex(recs, 50_000)
	assert.LessOrEqual(t, len(b), 50_000)
	got := parseIndex(b)
	require.Len(t, got, 100, "every session is kept")
	assert.Equal(t, "s000", got[0].id, "in order")
	assert.Equal(t, body, got[0].body, "the first fit whole")
	assert.Equal(t, "s099", got[99].id)
	assert.Equal(t, "-", got[99].fp, "the last as its id alone")
	assert.False(t, got[99].has(flagConvs), "whose conversations are looked at again")
	assert.Len(t, encodeIndex(recs, 1<<20), len(indexHeader)+1+100*len(recs["s000"].line()), "all whole when they fit")
}

// A session that cannot be cached is rescanned by every reader, who writes nothing for it: one such session does
// not make every ls rewrite the index.
func TestIndexUncachedSessionWritesNothing(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	for _, id := range []string{"a", "odd"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(s.Dir("odd"), ProjectsDir, "a b"), 0o755))
	_, err := s.Listing(false)
	require.NoError(t, err)
	settle(t, s)
	path := filepath.Join(s.Root, indexFile)
	before, err := os.Stat(path)
	require.NoError(t, err)
	recs, release, err := s.readIndex()
	defer release()
	require.NoError(t, err)
	require.Equal(t, "-", recs["odd"].fp)
	_, err = s.Listing(false)
	require.NoError(t, err)
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Ino, after.Sys().(*syscall.Stat_t).Ino, "the index was not rewritten")
}

// An index file in another order than encodeIndex's (not one sessionfs wrote) is read sorted, and of an id given
// twice its last line counts, as a map filled line by line would keep it: the readers join it with the sorted
// sessions.
func TestIndexReadSortedWhateverItsOrder(t *testing.T) {
	rec := func(id, convs string) string {
		return string(indexRecord{id: id, fp: strings.Repeat("a", 2*fpHalf), flags: "c", rels: baseRelsWords, convs: convs, body: "{}"}.line())
	}
	b := indexHeader + "\n" + rec("c", "x1") + rec("a", "x2") + rec("c", "x3") + "not a record\n" + rec("b", "x4") + rec("a", "x5")
	got := parseIndex([]byte(b))
	var ids, convs []string
	for _, r := range got {
		ids, convs = append(ids, r.id), append(convs, r.convs)
	}
	assert.Equal(t, []string{"a", "b", "c"}, ids)
	assert.Equal(t, []string{"x5", "x4", "x3"}, convs, "the last line of each id")

	s := newStore(t)
	for _, id := range []string{"b", "d"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	_, err := s.Listing(false)
	require.NoError(t, err)
	settle(t, s)
	path := filepath.Join(s.Root, indexFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	header, lines, _ := strings.Cut(string(data), "\n")
	recs := strings.Split(strings.TrimSuffix(lines, "\n"), "\n")
	slices.Reverse(recs)
	require.NoError(t, os.WriteFile(path, []byte(header+"\n"+strings.Join(recs, "\n")+"\n"), 0o600))
	ids, joined, release, err := s.loadIndex(false, true)
	defer release()
	require.NoError(t, err)
	require.Equal(t, []string{"b", "d"}, ids)
	for i, r := range joined {
		assert.Equal(t, ids[i], r.id, "each session joined with its own record")
	}
}

// An index of many lines that hold no record (its owner's to write; root may read another user's) costs its
// reader about its size, not a record's worth of memory a line.
func TestIndexOfEmptyLinesAllocatesLittle(t *testing.T) {
	b := []byte(indexHeader + "\n" + strings.Repeat("\n", 32<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := parseIndex(b)
	runtime.ReadMemStats(&after)
	assert.Empty(t, got)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "32 Mi empty lines: not 32 Mi records' worth (4 GiB)")
}

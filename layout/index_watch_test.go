package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vouchedAll waits (at most 10 s) until w vouches for every one of ids, and returns what it vouches for.
func vouchedAll(t *testing.T, w *IndexWatch, ids ...string) map[string]string {
	t.Helper()
	var got map[string]string
	require.Eventually(t, func() bool {
		got = ParseVouched(w.Vouch())
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every session armed")
	return got
}

// indexFingerprints are the index file's fingerprints by session.
func indexFingerprints(t *testing.T, s *Store) map[string]string {
	t.Helper()
	recs, release, err := s.readIndex()
	defer release()
	require.NoError(t, err)
	out := map[string]string{}
	for id, r := range recs {
		out[strings.Clone(id)] = strings.Clone(r.fp) // the mapped file's, gone at release
	}
	return out
}

// The watch vouches for a session only while nothing it is fingerprinted by changed, whoever changed it and
// however (in place, through another link, by moving a folder on the way away), and it says so at once: the
// changes are asked about right after they are made, with no wait. A reader that takes its word lists the
// changes as one that stats every session does.
func TestIndexWatchVouchesOnlyForUnchangedSessions(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	ids := []string{"edited", "linked", "moved", "newconv", "newcwd", "renamed", "same", "appended"}
	for _, id := range ids {
		_, err := s.Create(id, CreateOptions{Labels: map[string]string{"team": "web"}})
		require.NoError(t, err)
	}
	canon := func(id string) string { return filepath.Join(s.SessionsDir(), id, ProjectsDir, CanonicalProject) }
	transcript := filepath.Join(canon("appended"), "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl")
	require.NoError(t, os.WriteFile(transcript, []byte("{}\n"), 0o600))
	indexed(t, s)
	settle(t, s)

	w, err := s.WatchIndex()
	require.NoError(t, err)
	defer w.Close()
	assert.Empty(t, w.Vouch(), "nothing vouched for before it starts")
	w.Start()
	vouched := vouchedAll(t, w, ids...)
	assert.Equal(t, indexFingerprints(t, s), vouched, "what it vouches for is what the index holds")
	w.mu.Lock()
	assert.Len(t, w.byID["same"].wds, 4, "its folder, session.json, the projects folder and the canonical one")
	w.mu.Unlock()

	sess := func(id string, rel ...string) string {
		return filepath.Join(append([]string{s.SessionsDir(), id}, rel...)...)
	}
	// session.json changed in place, at its size.
	meta, err := os.ReadFile(sess("edited", MetaFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sess("edited", MetaFile), []byte(strings.Replace(string(meta), `"web"`, `"ops"`, 1)), 0o644))
	// session.json written through a hard link elsewhere in the session: no event in its folder.
	require.NoError(t, os.Link(sess("linked", MetaFile), sess("linked", "workspace", "link")))
	meta, err = os.ReadFile(sess("linked", MetaFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sess("linked", "workspace", "link"), []byte(strings.Replace(string(meta), `"web"`, `"cli"`, 1)), 0o644))
	// The projects folder moved away and made again: its new canonical folder is another inode, the path the same.
	require.NoError(t, os.Rename(sess("moved", ProjectsDir), sess("moved", ".claude", "old")))
	require.NoError(t, os.MkdirAll(canon("moved"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(canon("moved"), "3fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), []byte("{}\n"), 0o600))
	// A conversation made; a folder of another cwd made.
	require.NoError(t, os.WriteFile(filepath.Join(canon("newconv"), "4fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.Mkdir(sess("newcwd", ProjectsDir, "-home-me"), 0o755))
	// A session renamed behind the store.
	require.NoError(t, os.Rename(sess("renamed"), sess("renamed2")))
	// A transcript appended to: its folder's names are the same, so it is still vouched for (no wake-up either).
	f, err := os.OpenFile(transcript, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("{}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// A changed session is vouched for with its fingerprint of now, if it was armed again already: never with
	// the one the index holds.
	before := vouched
	vouched = ParseVouched(w.Vouch())
	var same []string
	for id, fp := range vouched {
		if before[id] == fp {
			same = append(same, id)
		}
	}
	assert.ElementsMatch(t, []string{"same", "appended"}, same, "only the sessions that did not change are vouched for as they were")

	s.Vouched = func() map[string]string { return vouched }
	got := indexed(t, s)
	assert.Equal(t, "ops", got["edited"].Labels["team"])
	assert.Equal(t, "cli", got["linked"].Labels["team"])
	assert.Equal(t, map[string]int{"claude": 1}, got["moved"].Agents)
	assert.Equal(t, map[string]int{"claude": 1}, got["newconv"].Agents)
	assert.Contains(t, got, "renamed2")
	assert.NotContains(t, got, "renamed")
	cands, err := s.ConversationCandidates(func(c string) bool { return strings.HasPrefix(c, "4fe2d21b") })
	require.NoError(t, err)
	assert.Equal(t, []string{"newconv"}, cands)

	// The changed sessions are armed again, with the names the index now fingerprints them by (newcwd's new
	// folder among them), and vouched for as the index has them.
	settle(t, s)
	all := []string{"edited", "linked", "moved", "newconv", "newcwd", "renamed2", "same", "appended"}
	require.Eventually(t, func() bool {
		v := ParseVouched(w.Vouch())
		fps := indexFingerprints(t, s)
		for _, id := range all {
			if v[id] == "" || v[id] != fps[id] {
				t.Logf("%s: vouched %q, indexed %q", id, v[id], fps[id])
				return false
			}
		}
		return true
	}, 10*time.Second, 500*time.Millisecond, "changed sessions armed again")
	require.NoError(t, os.WriteFile(filepath.Join(s.SessionsDir(), "newcwd", ProjectsDir, "-home-me", "x.jsonl"), nil, 0o600))
	assert.NotContains(t, ParseVouched(w.Vouch()), "newcwd", "a folder the index learnt of is watched")
}

// A fingerprint that is not the record's is no word for it: the reader stats the session, as without a watch.
func TestIndexVouchedOtherFingerprintIsStatted(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	_, err := s.Create("a", CreateOptions{})
	require.NoError(t, err)
	indexed(t, s)
	settle(t, s)
	require.NoError(t, os.WriteFile(filepath.Join(s.SessionsDir(), "a", ProjectsDir, CanonicalProject, "5fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), nil, 0o600))
	s.Vouched = func() map[string]string { return map[string]string{"a": strings.Repeat("0", 2*fpHalf)} }
	assert.Equal(t, map[string]int{"claude": 1}, indexed(t, s)["a"].Agents)
}

// Vouch's answer is read as untrusted text: lines that are no id and fingerprint are dropped.
func TestParseVouched(t *testing.T) {
	fp := strings.Repeat("ab", fpHalf)
	got := ParseVouched([]byte("a " + fp + "\n../x " + fp + "\nb -\nc " + fp[1:] + "\nd " + fp + " extra\n\ne " + fp))
	assert.Equal(t, map[string]string{"a": fp, "e": fp}, got)
}

// Closed while it arms thousands of sessions, the watch stops between two of them.
func TestIndexWatchClosesWhileArming(t *testing.T) {
	s := newStore(t)
	for i := range 300 {
		require.NoError(t, os.MkdirAll(filepath.Join(s.SessionsDir(), fmt.Sprintf("s%04d", i)), 0o755))
	}
	w, err := s.WatchIndex()
	require.NoError(t, err)
	w.Start()
	start := time.Now()
	w.Close()
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Empty(t, w.Vouch(), "a closed watch vouches for nothing")
}

// A session that planted a symlink among the names its record is checked by (its projects folder, pointing out of
// the store) is never vouched for: the watch opens each name beneath the sessions folder, where no symlink is
// followed, and watches nothing outside the session. Its reader stats it, as without a watch.
func TestIndexWatchNeverFollowsASessionsSymlink(t *testing.T) {
	withTestIndexer(t)
	s := newStore(t)
	for _, id := range []string{"plain", "planted"} {
		_, err := s.Create(id, CreateOptions{})
		require.NoError(t, err)
	}
	outside := t.TempDir()
	projects := filepath.Join(s.SessionsDir(), "planted", ProjectsDir)
	require.NoError(t, os.RemoveAll(projects))
	require.NoError(t, os.Symlink(outside, projects))
	indexed(t, s)

	w, err := s.WatchIndex()
	require.NoError(t, err)
	defer w.Close()
	w.Start()
	vouchedAll(t, w, "plain")
	time.Sleep(50 * time.Millisecond) // a second pass of arming changes nothing: the symlink stays
	assert.NotContains(t, ParseVouched(w.Vouch()), "planted")
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.byID["planted"]; p != nil {
		assert.Len(t, p.wds, 2, "its folder and session.json are watched, not what the symlink names")
	}
}

package layout

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ConversationIndex is what an indexer finds of a session's conversations without reading them.
type ConversationIndex struct {
	ByAgent map[string]int // conversations by agent, agents with none left out
	// IDs are the conversations' ids, or the start of one a file's name holds (Gemini's 8 characters).
	IDs []string
	// AnyID: the session holds conversations whose ids its names do not tell (a database): find looks inside.
	AnyID bool
	// Rels are the folders (and files) beneath the session whose change may change the above, parents first:
	// the folders the indexer read.
	Rels []string
}

var (
	indexerMu sync.RWMutex
	indexer   func(sess *Dir) ConversationIndex
)

// RegisterConversationIndexer sets how the index counts a session's conversations (the agents know; layout knows
// none of them). Records made without one say so and are rescanned by a process that has one.
func RegisterConversationIndexer(fn func(sess *Dir) ConversationIndex) {
	indexerMu.Lock()
	indexer = fn
	indexerMu.Unlock()
}

func conversationIndexer() func(sess *Dir) ConversationIndex {
	indexerMu.RLock()
	defer indexerMu.RUnlock()
	return indexer
}

// baseRels are fingerprinted for every session: its folder (a name made or removed in it, an agent's folder
// among them), its session.json, and Claude's folders where a new transcript appears.
var baseRels = []string{".", MetaFile}

const baseRelsWords = ". " + MetaFile

// defaultRels is what a session never indexed is fingerprinted by before its first scan.
const defaultRels = ". " + MetaFile + " " + ProjectsDir + " " + ProjectsDir + "/" + CanonicalProject

// fingerprint hashes what statx says of rels beneath session id (inode, change and modification times, size,
// type): any change of a name in them changes it. racy says one changed within racyWindow of now. It is two
// hashes in one, session.json's and the other names' (the session's folder, its conversation folders), so that
// find, which needs only the second, stats one name fewer of each session; withMeta false leaves the first out.
//
// statx resolves a path in one call, following a symlink planted on its way (only the last name is not
// followed): a name found not to be a folder ends the walk below it, so a planted link is never walked, but one
// swapped in between two calls could be. What comes of it is only hashed, never shown nor acted on: a changed
// hash makes the reader rescan the session through its descriptor, as everything else does.
func fingerprint(sessions *Dir, id string, rels string, now time.Time, withMeta bool) (fp string, racy bool) {
	hm, hc := fpSeed, fpSeed
	var path [MaxIDLen + 1 + 512 + 1]byte // id/rel and its NUL, built in place: 10,000 sessions, 40,000 names
	n := copy(path[:], id)
	var notDir [maxRecordRels + 4]string
	notDirs := 0
	cutoff := now.Add(-racyWindow)
	for rels != "" {
		var rel string
		rel, rels, _ = strings.Cut(rels, " ")
		h := &hc
		if rel == MetaFile {
			if !withMeta {
				continue
			}
			h = &hm
		}
		if slices.ContainsFunc(notDir[:notDirs], func(p string) bool { return p == "." || strings.HasPrefix(rel, p+"/") }) {
			h.add(0)
			continue
		}
		end := n
		if rel != "." {
			path[n] = '/'
			end = n + 1 + copy(path[n+1:len(path)-1], rel)
		}
		path[end] = 0
		var st unix.Statx_t
		if errno := statx(sessions.Fd(), &path[0], &st); errno != 0 {
			h.add(1<<32 | uint64(errno))
			if notDirs < len(notDir) {
				notDir[notDirs], notDirs = rel, notDirs+1
			}
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && notDirs < len(notDir) {
			notDir[notDirs], notDirs = rel, notDirs+1
		}
		h.add(st.Ino)
		h.add(uint64(st.Ctime.Sec)<<30 ^ uint64(st.Ctime.Nsec))
		h.add(uint64(st.Mtime.Sec)<<30 ^ uint64(st.Mtime.Nsec))
		h.add(st.Size)
		h.add(uint64(st.Mode)<<32 ^ unix.Mkdev(st.Dev_major, st.Dev_minor))
		for _, t := range []unix.StatxTimestamp{st.Ctime, st.Mtime} {
			if !time.Unix(t.Sec, int64(t.Nsec)).Before(cutoff) {
				racy = true
			}
		}
	}
	var sum [16]byte
	var out [2 * fpHalf]byte
	binary.BigEndian.PutUint64(sum[0:], hm.sum())
	binary.BigEndian.PutUint64(sum[8:], hc.sum())
	hex.Encode(out[:], sum[:])
	return string(out[:]), racy
}

// fpHash is FNV-1a over 64-bit words: the fingerprint tells a change from no change of a session's own names;
// it needs no strength against a session, which could only hide a change of itself from its own listing (and
// cannot choose the change times it would have to).
type fpHash uint64

const fpSeed fpHash = 0xcbf29ce484222325

func (h *fpHash) add(v uint64) { *h = (*h ^ fpHash(v)) * 0x100000001b3 }

func (h fpHash) sum() uint64 { return uint64(h ^ h>>29) }

// statx is unix.Statx on a NUL-terminated name, not following its last name, without the two allocations of a
// Go string's conversion.
func statx(dirfd int, name *byte, st *unix.Statx_t) unix.Errno {
	_, _, errno := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(name)),
		unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS, uintptr(unsafe.Pointer(st)), 0)
	return errno
}

// fresh reports whether r still describes session id: made with an indexer (when there is one), not racy, and of
// the same fingerprint now. changed says the session itself changed (its fingerprint, or no record to tell):
// only then is its size measured again.
func (r *indexRecord) fresh(sessions *Dir, now time.Time, counted, withMeta bool) (fresh, changed bool) {
	if r.fp == "-" { // never cached: rescanned, its size kept (measured again when an hour old)
		return false, false
	}
	fp, _ := fingerprint(sessions, r.id, r.rels, now, withMeta)
	if fp != r.fp && (withMeta || fp[fpHalf:] != r.fp[fpHalf:]) {
		return false, true
	}
	return r.freshAs(counted), false
}

// freshAs reports whether r, of the session's fingerprint now, still describes it: made with an indexer (when
// there is one), and not racy.
func (r *indexRecord) freshAs(counted bool) bool {
	return !r.has(flagRacy) && (!counted || r.has(flagConvs))
}

// scan makes session id's record. The fingerprint is taken before what it describes is read, so a change
// racing the scan leaves a record that is stale, never one that looks fresh. walk measures the session's size
// (a walk of all of it); without it the size of prev is kept.
func (s *Store) scan(sessions *Dir, id string, prev *indexRecord, walk bool) indexRecord {
	now := time.Now()
	rels := defaultRels
	if prev != nil && prev.rels != "" {
		rels = prev.rels
	}
	fp, racy := fingerprint(sessions, id, rels, now, true)
	r := indexRecord{id: id}
	var body indexBody
	counted, tooMany := false, false
	if d, err := s.OpenSession(id); err != nil {
		body.Damaged = err.Error()
		r.rels = baseRelsWords
	} else {
		if m, err := s.get(d, id); err != nil {
			body.Damaged = err.Error()
		} else {
			body.Meta = m
		}
		relList := slices.Clone(baseRels)
		if ix := conversationIndexer(); ix != nil {
			counted = true
			c := ix(d)
			body.Agents = c.ByAgent
			relList = appendRels(relList, c.Rels)
			convs := convIDs(c.IDs)
			if c.AnyID || len(convs) > maxRecordConvs {
				r.flags += string(flagAnyConv)
				if len(convs) > maxRecordConvs {
					convs = nil
				}
			}
			r.convs = strings.Join(convs, " ")
		}
		if len(relList) > maxRecordRels+len(baseRels) {
			tooMany = true
			relList = baseRels
		}
		r.rels = strings.Join(relList, " ")
		if walk || prev == nil {
			body.Size, body.LastActivity = UsageIn(d)
			body.SizedAt = time.Now().UTC()
		} else if old, ok := prev.decodeBody(); ok {
			body.Size, body.LastActivity, body.SizedAt = old.Size, old.LastActivity, old.SizedAt
		}
		d.Close()
	}
	if counted {
		r.flags += string(flagConvs)
	}
	if r.rels != rels { // the names read are not those fingerprinted: fingerprint them now
		fp, _ = fingerprint(sessions, id, r.rels, now, true)
		racy = true
	}
	if racy {
		r.flags += string(flagRacy)
	}
	r.fp = fp
	b, _ := json.Marshal(body)
	r.body = string(b)
	if len(r.body) > maxRecordBody || tooMany {
		// Too much to cache: the file keeps only its size (measured once), and the session is rescanned on every
		// read, only its own cost; this record, in memory, is whole.
		r.stored, _ = json.Marshal(indexBody{Size: body.Size, LastActivity: body.LastActivity, SizedAt: body.SizedAt})
		r.fp, r.rels, r.flags = "-", baseRelsWords, strings.ReplaceAll(r.flags, string(flagRacy), "")
	}
	return r
}

// appendRels adds the indexer's names to rels, each once; a name that is not a plain relative path makes the
// list too long to keep (the session is then rescanned on every read).
func appendRels(rels, more []string) []string {
	for _, rel := range more {
		if !validIndexRel(rel) {
			return append(rels, make([]string, maxRecordRels+1)...)
		}
		if !slices.Contains(rels, rel) {
			rels = append(rels, rel)
		}
	}
	return rels
}

// convIDs are ids sorted, each once, those that are no id (they could not be found by one) left out.
func convIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if ValidateID(id) == nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// loadIndex returns the store's sessions, sorted, and a record for each (recs[i] is ids[i]'s), true to the
// session now: the index's records that are still fresh, the others rescanned (walked when walkAll, or when
// changed) and written back. withMeta false trusts a record whose session.json alone changed (find's
// conversations are the same). The records are parts of the index file's bytes until release, which the caller
// calls when done with them.
func (s *Store) loadIndex(walkAll, withMeta bool) (ids []string, recs []*indexRecord, release func(), err error) {
	sessions, err := s.Sessions()
	if err != nil {
		return nil, nil, nil, err
	}
	// The sessions folder, the index and what a watcher vouches for are read at once: none needs the others.
	done := make(chan struct{})
	go func() {
		defer close(done)
		ids, err = sessionNames(sessions)
	}()
	var vouched map[string]string
	vouchedDone := make(chan struct{})
	if s.Vouched != nil && !walkAll {
		go func() {
			defer close(vouchedDone)
			vouched = s.Vouched()
		}()
	} else {
		close(vouchedDone)
	}
	list, release, _ := s.readIndexSorted() // an unreadable index is rebuilt
	<-done
	<-vouchedDone
	if err != nil {
		release()
		return nil, nil, nil, wrap("list", "", s.SessionsDir(), err)
	}
	// Both are sorted by id: joined in one pass, no map. A record of a session no longer in the folder is left.
	recs = make([]*indexRecord, len(ids))
	joined := 0
	for i, j := 0, 0; i < len(ids) && j < len(list); {
		switch c := strings.Compare(ids[i], list[j].id); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			recs[i] = &list[j]
			joined++
			i, j = i+1, j+1
		}
	}
	now := time.Now()
	counted := conversationIndexer() != nil
	stale, walk := make([]bool, len(ids)), make([]bool, len(ids))
	if walkAll {
		for i := range stale {
			stale[i], walk[i] = true, true
		}
	} else {
		parallelIO(len(ids), func(i int) {
			r := recs[i]
			if r == nil {
				stale[i], walk[i] = true, true
				return
			}
			if fp, ok := vouched[ids[i]]; ok && fp == r.fp {
				stale[i] = !r.freshAs(counted)
				return
			}
			fresh, changed := r.fresh(sessions, now, counted, withMeta)
			stale[i], walk[i] = !fresh, changed
		})
	}
	var todo []int
	for i := range ids {
		if stale[i] {
			todo = append(todo, i)
		}
	}
	scanned := make([]indexRecord, len(todo))
	same := make([]bool, len(todo))
	progress := s.progress(len(todo))
	var mu sync.Mutex
	parallelIO(len(todo), func(j int) {
		i := todo[j]
		prev := recs[i]
		r := s.scan(sessions, ids[i], prev, walk[i])
		scanned[j] = r
		same[j] = prev != nil && bytes.Equal(prev.line(), r.line()) // a session never cached: nothing to write
		mu.Lock()
		progress()
		mu.Unlock()
	})
	var changed []indexRecord
	for j, i := range todo {
		recs[i] = &scanned[j]
		if !same[j] {
			changed = append(changed, scanned[j])
		}
	}
	listed := func(id string) bool { _, ok := slices.BinarySearch(ids, id); return ok }
	gone := joined < len(list) // a record of a session no longer in the folder
	// Written back under the lock, over what the file holds then: a record another writer made meanwhile may give
	// way to this older scan of the session, which is never wrongly fresh (its fingerprint was taken before what
	// it read, so a later change shows as stale to the next reader).
	if len(changed) > 0 || gone {
		_ = s.writeIndex(func(cur map[string]indexRecord) {
			for _, r := range changed {
				cur[r.id] = r
			}
			for id := range cur {
				if !listed(id) && !s.Exists(id) {
					delete(cur, id)
				}
			}
		})
	}
	return ids, recs, release, nil
}

// sessionNames is IDs without its regexp (10,000 of them cost as much as the readdir): the folders of sessions
// whose names are ids, sorted.
func sessionNames(sessions *Dir) ([]string, error) {
	names, err := sessions.Folders()
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, name := range names {
		if validIndexID(name) {
			ids = append(ids, name)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// parallel runs fn(0..n-1) on a few goroutines, one a processor, each a share of the range: for work on the
// processor alone (decoding 10,000 records).
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 4, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * n / workers; i < (w+1)*n/workers; i++ {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// parallelIO is parallel for work that waits on the disk (a rescan walks every folder of a session; a cold
// cache makes each statx a read): enough goroutines to keep the disk's queue full, each taking the next item, so
// a slow session holds up only its own goroutine.
func parallelIO(n int, fn func(i int)) {
	workers := min(max(8*runtime.GOMAXPROCS(0), 16), 64, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// progress returns what a rescan of total sessions calls after each: it tells s.IndexProgress, when set, of the
// sessions done. Called with the caller's lock held (one at a time).
func (s *Store) progress(total int) func() {
	report := s.IndexProgress
	if report == nil || total == 0 {
		return func() {}
	}
	done := 0
	return func() {
		done++
		report(done, total)
	}
}

// Listed is a session as the index lists it: its Info, and its conversations by agent.
type Listed struct {
	Info
	Agents map[string]int
}

// Listing describes every session, sorted by id, from the index (which it brings up to date first): as List
// does, but without walking every session. Size and LastActivity are those measured when the session last
// changed (its session.json, its conversations) or was last listed with sizes; sizes measures every session
// now.
func (s *Store) Listing(sizes bool) ([]Listed, error) {
	ids, recs, release, err := s.loadIndex(sizes, true)
	if err != nil {
		return nil, err
	}
	defer release() // out is decoded: it holds none of recs' bytes
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(ids))
	sizedAt := make([]time.Time, len(ids))
	parallel(len(ids), func(i int) { // decoding 10,000 records is most of what is left
		r := *recs[i]
		body, ok := r.decodeBody()
		if !ok { // never so of a record made here: a hostile file's is rescanned
			r = s.scan(sessions, ids[i], nil, true)
			body, _ = r.decodeBody()
		}
		out[i], sizedAt[i] = s.listed(ids[i], body), body.SizedAt
	})
	if !sizes {
		s.refreshOldSizes(sessions, recs, out, sizedAt)
	}
	return out, nil
}

// listed is session id as Listing returns it, from its record's body.
func (s *Store) listed(id string, body indexBody) Listed {
	l := Listed{Info: Info{Dir: s.SessionsDir() + "/" + id}, Agents: body.Agents} // Dir(id) without Clean: id is one
	if body.Meta != nil {
		l.Meta = *body.Meta
	}
	l.ID, l.Damaged, l.Size, l.LastActivity = id, body.Damaged, body.Size, body.LastActivity
	if l.Agents == nil {
		l.Agents = map[string]int{}
	}
	return l
}

// Sizes older than sizeMaxAge are measured again by the next ls, the oldest first, for at most sizeBudget of its
// time: a store listed now and then has its sizes at most about that old, and no ls waits for a whole walk.
const (
	sizeMaxAge = time.Hour
	sizeBudget = 20 * time.Millisecond
)

// refreshOldSizes measures again the sizes of out measured longest ago (sizedAt), older than sizeMaxAge, within
// sizeBudget, and keeps them in the index.
func (s *Store) refreshOldSizes(sessions *Dir, recs []*indexRecord, out []Listed, sizedAt []time.Time) {
	now := time.Now()
	var old []int
	for i, t := range sizedAt {
		if now.Sub(t) > sizeMaxAge {
			old = append(old, i)
		}
	}
	if len(old) == 0 {
		return
	}
	slices.SortFunc(old, func(a, b int) int { return sizedAt[a].Compare(sizedAt[b]) })
	var changed []indexRecord
	for _, i := range old {
		if time.Since(now) > sizeBudget {
			break
		}
		r := s.scan(sessions, out[i].ID, recs[i], true)
		if body, ok := r.decodeBody(); ok {
			out[i] = s.listed(out[i].ID, body)
			changed = append(changed, r)
		}
	}
	_ = s.writeIndex(func(cur map[string]indexRecord) {
		for _, r := range changed {
			if _, ok := cur[r.id]; ok {
				cur[r.id] = r
			}
		}
	})
}

// ConversationCandidates are the sessions that may hold a conversation whose id match accepts, sorted: those
// whose (fresh) record names one, and those whose conversations the names do not tell. match's argument is
// valid during the call only (a part of the index file, which may be mapped). The caller looks in them
// as it would in every session.
func (s *Store) ConversationCandidates(match func(conv string) bool) ([]string, error) {
	ids, recs, release, err := s.loadIndex(false, false) // find reads no session.json of the index: only its conversations
	if err != nil {
		return nil, err
	}
	defer release() // out holds ids, not recs' bytes
	var out []string
	for i, id := range ids {
		r := recs[i]
		if _, all := eachWord(r.convs, func(c string) bool { return !match(c) }); r.has(flagAnyConv) || !r.has(flagConvs) || !all {
			out = append(out, id)
		}
	}
	return out, nil
}

// Reindex brings the records of sessions ids up to date after a change (made, renamed, restored, placed): a
// record for each that exists, none for one gone. It is best effort, as the index is a cache: an error leaves a
// record that the next reader finds stale. An index not made yet is left to its first reader. Remove does not
// call it: the next reader's readdir shows a session gone at no cost (no rescan), and gc, which removes
// sessions by the hundred, would rewrite the whole index for each.
func (s *Store) Reindex(ids ...string) {
	s.reindex(nil, ids...)
}

// ReindexRenamed is Reindex after session from became to: to keeps from's measured size (a rename changes no
// byte, and walking a large session would slow the rename).
func (s *Store) ReindexRenamed(from, to string) {
	s.reindex(map[string]string{to: from}, from, to)
}

func (s *Store) reindex(carry map[string]string, ids ...string) {
	sessions, err := s.Sessions()
	if err != nil {
		return
	}
	b, release, err := s.indexBytes()
	release()
	if err != nil || b == nil {
		return
	}
	_ = s.writeIndex(func(cur map[string]indexRecord) {
		old := maps.Clone(cur)
		for _, id := range ids {
			if ValidateID(id) != nil {
				continue
			}
			if !s.Exists(id) {
				delete(cur, id)
				continue
			}
			var prev *indexRecord
			if from, ok := carry[id]; ok {
				if r, ok := old[from]; ok {
					prev = &r
				}
			} else if r, ok := old[id]; ok {
				prev = &r
			}
			_, renamed := carry[id]
			cur[id] = s.scan(sessions, id, prev, !renamed)
		}
	})
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The index: what ls and find read of every session, kept in one file of the store so that listing 10,000
// sessions reads one file and stats a few names per session instead of walking every session folder.
//
// <root>/index/sessions is a header line and one line per session:
//
//	<id> TAB <fingerprint> TAB <flags> TAB <rels> TAB <conversation ids> TAB <json of the cached Info>
//
// It is a cache, never the truth: every record carries the fingerprint (statx of the names in rels: the session's
// folder, its session.json, its agents' conversation folders) it was made under, and a reader recomputes the
// fingerprints and rescans the sessions whose changed, those it lacks and drops those gone (a readdir of the
// sessions folder). So a session changed by another host sharing the store, by an older sessionfs, by the
// session's own processes, or a crash between a change and the index's update, is seen at once: as soon as
// this host's filesystem shows the change (a shared filesystem's attribute cache may delay it, as it delays any
// stat), provided the hosts' clocks agree within a second (the racy window below).
//
// Who writes it: a reader that found records stale (it writes back what it rescanned), and the store's own
// changes of a session (Create, Rename, RestoreSession, Place: Reindex).
//
// One file, replaced whole (temp + rename beneath the root's descriptor): a reader reads it with no lock and sees
// an old or a new file, never half of one. Writers take an flock on <root>/index/lock, reread the file and
// change only the lines of the sessions they rescanned, so two writers never lose each other's records. Chosen
// over a file per session because reading 10,000 files costs what the index saves.
//
// Everything in it came from sessions (attacker-controlled): a line that does not parse, an id that is not one,
// a name that is not a plain relative path, is dropped (and its session rescanned); a file too large or of
// another version is ignored and rebuilt. The index never names a path: ids are checked by ValidateID's rule and
// every access still goes through the sessions folder's descriptor.
const (
	indexName   = "index"
	indexBase   = "sessions" // the file's name in indexName
	indexFile   = indexName + "/" + indexBase
	indexLock   = indexName + "/lock"
	indexHeader = "sessionfs-index 1"

	maxIndexSize   = 256 << 20 // a larger file is not read (rebuilt instead)
	maxRecordBody  = 64 << 10  // a session whose cached Info is larger is not cached: rescanned on every read
	maxRecordRels  = 64        // a session with more conversation folders is rescanned on every read
	maxRecordConvs = 1000      // a session with more conversations is a candidate of every find
	fpHalf         = 16        // hex digits of each of a fingerprint's two hashes
)

// Flags of a record.
const (
	flagAnyConv = '*' // find must look inside: conversations its names do not tell (a database), or too many
	flagRacy    = 'r' // a name changed within racyWindow of its fingerprint: the next reader rescans it
	flagConvs   = 'c' // conversations were counted (an indexer was registered)
)

// racyWindow: a change within this long of a fingerprint could share its timestamp (coarse clocks, a second on
// some filesystems), so such a record is rescanned once more, as git does with racily clean files.
const racyWindow = 2 * time.Second

// indexBody is the cached part of a record.
type indexBody struct {
	Meta         *Meta          `json:"meta,omitempty"`
	Damaged      string         `json:"damaged,omitempty"`
	Size         int64          `json:"size"`
	LastActivity time.Time      `json:"last_activity,omitzero"`
	SizedAt      time.Time      `json:"sized_at,omitzero"` // when Size was measured
	Agents       map[string]int `json:"agents,omitempty"`
}

// indexRecord is one session's line. A record read from the file is parts of its bytes, which may be mapped
// (indexBytes): what must outlive the read's release is cloned (scan makes new strings; JSON decodes copy).
type indexRecord struct {
	id    string
	fp    string // hex, session.json's hash then the others' (fpHalf each), or "-": never fresh
	flags string
	rels  string // names beneath the session, space-separated, parents first
	convs string // conversation ids, space-separated
	body  string // JSON of indexBody, decoded by those who need it
	// stored, when set, is what the file keeps of body: less than a session too large to cache has (fp "-").
	stored []byte
}

func (r indexRecord) has(flag byte) bool { return strings.IndexByte(r.flags, flag) >= 0 }

// line is r as the file holds it.
func (r indexRecord) line() []byte {
	var b bytes.Buffer
	b.WriteString(r.id)
	b.WriteByte('\t')
	b.WriteString(r.fp)
	b.WriteByte('\t')
	b.WriteString(r.flags)
	b.WriteByte('\t')
	b.WriteString(r.rels)
	b.WriteByte('\t')
	b.WriteString(r.convs)
	b.WriteByte('\t')
	if r.stored != nil {
		b.Write(r.stored)
	} else {
		b.WriteString(r.body) // JSON: no raw tab or newline
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// parseRecord reads one line (without its newline); ok is false for anything but a well-formed record. The
// record's fields are parts of line: no copy.
func parseRecord(line string) (r indexRecord, ok bool) {
	var f [6]string
	for i := range 5 {
		var found bool
		if f[i], line, found = strings.Cut(line, "\t"); !found {
			return r, false
		}
	}
	f[5] = line
	if !validIndexID(f[0]) || len(f[5]) > maxRecordBody || !validFingerprint(f[1]) {
		return r, false
	}
	r = indexRecord{id: f[0], fp: f[1], flags: f[2], rels: f[3], convs: f[4], body: f[5]}
	if n, ok := eachWord(r.rels, validIndexRel); !ok || n > maxRecordRels+len(baseRels) {
		return r, false
	}
	if n, ok := eachWord(r.convs, validIndexID); !ok || n > maxRecordConvs {
		return r, false
	}
	return r, true
}

// eachWord calls fn with each space-separated word of list until it returns false; it returns the words seen and
// whether fn took them all.
func eachWord(list string, fn func(w string) bool) (n int, ok bool) {
	for list != "" {
		var w string
		w, list, _ = strings.Cut(list, " ")
		if n++; !fn(w) {
			return n, false
		}
	}
	return n, true
}

func validFingerprint(b string) bool {
	if b == "-" {
		return true
	}
	if len(b) != 2*fpHalf {
		return false
	}
	for _, c := range []byte(b) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validIndexRel reports whether rel may be in rels: a plain relative path of [A-Za-z0-9._-] names (no "..", no
// space, tab or newline), or "." (the session's folder). Checked by hand: an index holds 50,000 of them.
func validIndexRel(rel string) bool {
	if rel == "." {
		return true
	}
	if rel == "" || len(rel) > 512 {
		return false
	}
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			if !idByte(rel[i]) {
				return false
			}
			continue
		}
		if part := rel[start:i]; part == "" || part == "." || part == ".." {
			return false
		}
		start = i + 1
	}
	return true
}

// validIndexID is ValidateID without its error and regexp: 1-MaxIDLen bytes of [A-Za-z0-9._-], the first a
// letter or digit.
func validIndexID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen || id[0] == '.' || id[0] == '_' || id[0] == '-' {
		return false
	}
	for _, c := range []byte(id) {
		if !idByte(c) {
			return false
		}
	}
	return true
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// readIndex reads the index file: its records by id, and release, to call once no record is used any more
// (they are parts of the file's bytes: indexBytes). A missing, oversized or foreign file is no records; a line
// that does not parse is skipped (its session is rescanned).
func (s *Store) readIndex() (recs map[string]indexRecord, release func(), err error) {
	list, release, err := s.readIndexSorted()
	recs = make(map[string]indexRecord, len(list))
	for _, r := range list {
		r.id = strings.Clone(r.id) // what callers hand on outlives the bytes
		recs[r.id] = r
	}
	return recs, release, err
}

// readIndexSorted is readIndex as a list sorted by id, each id once: readers that walk the sessions in order
// (loadIndex) join it with them, which costs a tenth of building and probing a map of 10,000 records.
func (s *Store) readIndexSorted() (recs []indexRecord, release func(), err error) {
	b, release, err := s.indexBytes()
	if err != nil {
		return nil, release, err
	}
	return parseIndex(b), release, nil
}

// parseIndex takes b: the records are parts of it, not copies (3 MiB at 10,000 sessions, and as many pages
// faulted in), so no one may write b afterwards, nor unmap it while a record is used. They are sorted by id, as
// encodeIndex writes them; a file in another order (not one sessionfs wrote) is sorted here, and of an id given
// twice the last line counts.
func parseIndex(b []byte) []indexRecord {
	// Sized by its lines, up to a store far larger than any seen: a file of 256 MiB of empty lines (it is its
	// owner's to write, and root may read another user's) must not make the reader ask for gigabytes.
	out := make([]indexRecord, 0, min(bytes.Count(b, []byte{'\n'}), 1<<17))
	text := unsafe.String(unsafe.SliceData(b), len(b))
	header, rest, _ := strings.Cut(text, "\n")
	if header != indexHeader {
		return out
	}
	sorted := true
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if r, ok := parseRecord(line); ok {
			sorted = sorted && (len(out) == 0 || out[len(out)-1].id < r.id)
			out = append(out, r)
		}
	}
	if !sorted {
		slices.Reverse(out) // the last line of an id first, which stable sorting keeps first and compacting keeps
		slices.SortStableFunc(out, func(a, b indexRecord) int { return strings.Compare(a.id, b.id) })
		out = slices.CompactFunc(out, func(a, b indexRecord) bool { return a.id == b.id })
	}
	return out
}

// indexBytes is the index file whole: a regular file, not through a symlink, at most maxIndexSize bytes; nothing
// (nil) when it is missing or not such a file. release ends the use of the bytes: never nil.
//
// A file only this user can have written is mapped, not read: reading 3 MiB (10,000 sessions) into fresh memory
// took 10 ms of find's 70, its pages faulted in one by one and copied; mapped it takes 1. A file shrunk while it
// is mapped faults its reader (SIGBUS), and sessionfs never shrinks one (a new index is a new file, renamed over
// it); but the owner of the index folder may link any file there (a root reader of another user's store would map
// a root-owned file that user can still write). So only a file of this user's, in an index folder of this user's
// that no one else may write, is mapped; any other is read. A session's processes cannot reach the index.
func (s *Store) indexBytes() (b []byte, release func(), err error) {
	release = func() {}
	if err := s.open(); err != nil {
		return nil, release, err
	}
	dir, err := s.root.Sub(indexName)
	var f *os.File
	if err == nil {
		defer dir.Close()
		f, err = dir.OpenRegular(indexBase, maxIndexSize)
	}
	if errors.Is(err, ErrDamaged) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ELOOP) {
		return nil, release, nil
	}
	if err != nil {
		return nil, release, err
	}
	defer f.Close()
	var st, dirSt unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, release, err
	}
	size := min(st.Size, maxIndexSize)
	euid := os.Geteuid()
	if size > 0 && int(st.Uid) == euid && unix.Fstat(dir.Fd(), &dirSt) == nil && int(dirSt.Uid) == euid && dirSt.Mode&0o022 == 0 {
		if b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_POPULATE); err == nil {
			return b, func() { _ = unix.Munmap(b) }, nil
		}
	}
	// Read at its size in one go (a replaced file is a new inode: this one's size does not change).
	b = make([]byte, size)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, release, err
	}
	return b[:n], release, nil
}

// writeIndex changes the index under its lock: change gets the records as the file holds them now and edits
// them; they are written back whole, atomically. A store that cannot be written (read-only, another user's)
// keeps its index as it is: the index is a cache.
func (s *Store) writeIndex(change func(recs map[string]indexRecord)) error {
	if err := s.open(); err != nil {
		return err
	}
	// Owned as the store's root is: an index a root daemon wrote stays the store's owner's to rewrite.
	uid, gid, err := s.root.Owner()
	if err != nil {
		return err
	}
	if err := s.root.MkdirAll(indexName, 0o755, uid, gid); err != nil {
		return err
	}
	fd, err := s.root.OpenAt(indexLock, unix.O_RDWR|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if os.Geteuid() == 0 {
		_ = unix.Fchown(fd, uid, gid)
	}
	for {
		if err = unix.Flock(fd, unix.LOCK_EX); err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return err
	}
	defer unix.Flock(fd, unix.LOCK_UN) //nolint:errcheck // closing releases it too
	recs, release, err := s.readIndex()
	defer release() // after the new file is written from them
	if err != nil {
		return err
	}
	change(recs)
	// The owner's alone (as search.db beside it): it copies every session's metadata, and a session its owner made
	// private (0700) keeps its session.json from other users.
	return s.root.WriteAtomicFrom(indexFile, bytes.NewReader(encodeIndex(recs, maxIndexSize)), 0o600, uid, gid, time.Time{})
}

// encodeIndex is the index file's bytes: the header and the records, sorted by id, in at most limit bytes. When
// the records would not fit (thousands of sessions each caching its 64 KiB), those that no longer fit are kept
// as ids alone (fp "-": rescanned on every read) so the file stays readable, never dropped nor too large to read.
func encodeIndex(recs map[string]indexRecord, limit int) []byte {
	const trimmedLen = MaxIDLen + 32 // the longest line of an id alone
	var b bytes.Buffer
	b.WriteString(indexHeader + "\n")
	room := limit - b.Len() - trimmedLen*len(recs) // beyond what the ids alone need
	for _, id := range sortedKeys(recs) {
		r := recs[id]
		line := r.line()
		if extra := len(line) - trimmedLen; extra > 0 {
			if extra > room {
				r = indexRecord{id: id, fp: "-", flags: strings.ReplaceAll(r.flags, string(flagConvs), ""), rels: baseRelsWords, body: "{}"}
				line = r.line()
			} else {
				room -= extra
			}
		}
		b.Write(line)
	}
	return b.Bytes()
}

// decodeBody reads a record's cached part; ok is false when it does not parse.
func (r *indexRecord) decodeBody() (indexBody, bool) {
	var b indexBody
	if err := json.Unmarshal([]byte(r.body), &b); err != nil {
		return b, false
	}
	if b.Meta != nil {
		b.Meta.ID = r.id
		b.Meta.sanitize()
	}
	return b, true
}

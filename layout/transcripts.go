package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Transcripts removed through the mount wait in the trash until `gc --trash`: Claude Code deletes old
// transcripts at start-up, and people rm the wrong thing; nothing is lost. Each lands in
//
//	<store>/trash/transcripts/<id>/<batch>/<path in the canonical folder>
//
// one batch per removal (<batch> is 20060102T150405Z, the second it began, with -N added when a name was removed
// twice in that second). A removal that spans seconds (rm -rf of a conversation and its subagents) keeps its
// first batch: the caller passes it back (TrashTranscriptIn). When the disk is too full to make those folders, the removal must still succeed (the file is
// already written; a rename needs no space), so it lands flat in the transcripts folder, which always exists:
//
//	<store>/trash/transcripts/<id>~<batch>~<path with %, ~ and / escaped as %25, %7E, %2F>
//
// Listing and restoring understand both. Moves are renames between the session's descriptor and the trash's:
// nothing in the session is followed, and the trash only ever receives what the session held.

// TranscriptTrashDir is where session id's removed transcripts wait (in folders; see above for the flat form).
func (s *Store) TranscriptTrashDir(id string) string {
	return filepath.Join(s.TrashDir(), transcriptTrash, id)
}

const batchLayout = "20060102T150405Z"

// maxBatchTries bounds the -N suffixes tried for one name within one second.
const maxBatchTries = 1000

func batchName(base string, i int) string {
	if i == 0 {
		return base
	}
	return base + "-" + strconv.Itoa(i)
}

// parseBatch reads a batch name: its time and its -N (0 without one).
func parseBatch(b string) (removed time.Time, seq int, ok bool) {
	if len(b) < len(batchLayout) {
		return time.Time{}, 0, false
	}
	removed, err := time.Parse(batchLayout, b[:len(batchLayout)])
	if err != nil {
		return time.Time{}, 0, false
	}
	if rest := b[len(batchLayout):]; rest != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(rest, "-"))
		if !strings.HasPrefix(rest, "-") || err != nil || n <= 0 {
			return time.Time{}, 0, false
		}
		seq = n
	}
	return removed, seq, true
}

var flatEscaper = strings.NewReplacer("%", "%25", "~", "%7E", "/", "%2F")

func flatName(id, batch, rel string) string { return id + "~" + batch + "~" + flatEscaper.Replace(rel) }

// parseFlat reads a flat trash name of session id.
func parseFlat(id, name string) (batch, rel string, ok bool) {
	rest, ok := strings.CutPrefix(name, id+"~")
	if !ok {
		return "", "", false
	}
	batch, esc, ok := strings.Cut(rest, "~")
	if !ok {
		return "", "", false
	}
	rel, err := url.PathUnescape(esc)
	if err != nil || !validRel(rel) {
		return "", "", false
	}
	return batch, rel, true
}

// validRel accepts a relative path of plain names: no empty, "." or ".." part, no NUL, not absolute.
func validRel(rel string) bool {
	if rel == "" || strings.ContainsRune(rel, 0) {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// transcriptTrashDir opens <root>/trash/transcripts, making it if an older store lacks it.
func (s *Store) transcriptTrashDir() (*Dir, error) {
	trash, err := s.Trash()
	if err != nil {
		return nil, err
	}
	d, err := trash.Sub(transcriptTrash)
	if errors.Is(err, syscall.ENOENT) {
		if err = trash.MkdirAll(transcriptTrash, 0o700, -1, -1); err == nil {
			d, err = trash.Sub(transcriptTrash)
		}
	}
	return d, err
}

func noSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) }

// TrashTranscript moves rel (a path inside the session's canonical transcript folder) into the session's
// transcript trash, keeping its place in the folder. It works on a full disk too (see above). rel is resolved
// beneath the session with no symlink followed; the entry itself is moved, whatever it is.
func (s *Store) TrashTranscript(id, rel string, now time.Time) error {
	_, err := s.TrashTranscriptIn(id, rel, now, "")
	return err
}

// TrashTranscriptIn is TrashTranscript putting rel into batch prefer when it is a batch name and rel is not in it
// yet, and into a new batch of now otherwise. It returns the batch used, for the next file of the same removal.
func (s *Store) TrashTranscriptIn(id, rel string, now time.Time, prefer string) (batch string, err error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	if !validRel(rel) {
		return "", &Error{Op: "trash transcript", ID: id, Path: printable(rel), Kind: ErrOutside}
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	src := ProjectsDir + "/" + CanonicalProject + "/" + rel
	if _, err := sess.Lstat(src); err != nil {
		return "", wrap("trash transcript", id, rel, err)
	}
	tt, err := s.transcriptTrashDir()
	if err != nil {
		return "", wrap("trash transcript", id, s.TranscriptTrashDir(id), err)
	}
	defer tt.Close()
	var tries []string
	if _, _, ok := parseBatch(prefer); ok {
		tries = append(tries, prefer)
	}
	base := now.UTC().Format(batchLayout)
	for i := 0; i < maxBatchTries; i++ {
		tries = append(tries, batchName(base, i))
	}
	for _, b := range tries {
		dst := id + "/" + b + "/" + rel
		err := tt.MkdirAll(path.Dir(dst), 0o700, -1, -1)
		if err == nil {
			err = sess.RenameTo(src, tt, dst, unix.RENAME_NOREPLACE)
		}
		if noSpace(err) { // no new folder, or a folder that needs a new block for one more name
			return s.trashFlat(sess, src, tt, id, b, rel)
		}
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, syscall.EEXIST) {
			return "", wrap("trash transcript", id, rel, err)
		}
	}
	return "", &Error{Op: "trash transcript", ID: id, Path: printable(rel), Err: errors.New("removed too often within one second")}
}

// trashFlat moves src to the flat form, in batch b or, when rel is there already, a later one of its second.
func (s *Store) trashFlat(sess *Dir, src string, tt *Dir, id, b, rel string) (string, error) {
	removed, seq, _ := parseBatch(b)
	base := removed.UTC().Format(batchLayout)
	for i := seq; i < seq+maxBatchTries; i++ {
		err := sess.RenameTo(src, tt, flatName(id, batchName(base, i), rel), unix.RENAME_NOREPLACE)
		if err == nil {
			return batchName(base, i), nil
		}
		if !errors.Is(err, syscall.EEXIST) {
			return "", wrap("trash transcript", id, rel, err)
		}
	}
	return "", wrap("trash transcript", id, rel, syscall.EEXIST)
}

// TrashedTranscript is a conversation waiting in a session's transcript trash.
type TrashedTranscript struct {
	UUID    string    `json:"uuid"`
	Removed time.Time `json:"removed"`
	Size    int64     `json:"size"`
	Batch   string    `json:"batch"`
	Files   int       `json:"files"` // the transcript, and what of its <uuid>/ folder was removed
}

// trashed is one removed file: where it lies beneath the transcripts trash, and where it was in the canonical
// folder.
type trashed struct {
	batch   string
	removed time.Time
	seq     int
	loc     string // beneath <root>/trash/transcripts
	rel     string // in the canonical folder
	size    int64
}

func (t trashed) uuid() string {
	first, _, _ := strings.Cut(t.rel, "/")
	return strings.TrimSuffix(first, ".jsonl")
}

// trashedFiles lists what session id has in the transcript trash, in both forms, without following anything.
func (s *Store) trashedFiles(tt *Dir, id string) ([]trashed, error) {
	var out []trashed
	batches, err := tt.ReadDir(id)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, b := range batches {
		removed, seq, ok := parseBatch(b.Name())
		if !ok || !b.IsDir() {
			continue
		}
		dir := id + "/" + b.Name()
		walkFiles(tt, dir, "", 0, func(rel string, size int64) {
			out = append(out, trashed{batch: b.Name(), removed: removed, seq: seq, loc: dir + "/" + rel, rel: rel, size: size})
		})
	}
	flat, err := tt.ReadDir(".")
	if err != nil {
		return nil, err
	}
	for _, e := range flat {
		batch, rel, ok := parseFlat(id, e.Name())
		if !ok {
			continue
		}
		removed, seq, ok := parseBatch(batch)
		if !ok {
			continue
		}
		t := trashed{batch: batch, removed: removed, seq: seq, loc: e.Name(), rel: rel}
		if st, err := tt.Lstat(e.Name()); err == nil {
			t.size = st.Size
		}
		out = append(out, t)
	}
	return out, nil
}

// walkFiles calls fn for everything but folders beneath d/dir (relative to dir), never following a symlink.
func walkFiles(d *Dir, dir, rel string, depth int, fn func(rel string, size int64)) {
	if depth > maxUsageDepth {
		return
	}
	ents, err := d.ReadDir(path.Join(dir, rel))
	if err != nil {
		return
	}
	for _, e := range ents {
		r := path.Join(rel, e.Name())
		if e.IsDir() {
			walkFiles(d, dir, r, depth+1, fn)
			continue
		}
		var size int64
		if st, err := d.Lstat(dir + "/" + r); err == nil {
			size = st.Size
		}
		fn(r, size)
	}
}

// TrashedTranscripts lists a session's removed conversations, newest first.
func (s *Store) TrashedTranscripts(id string) ([]TrashedTranscript, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	tt, err := s.transcriptTrashDir()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, wrap("list transcript trash", id, "", err)
	}
	defer tt.Close()
	files, err := s.trashedFiles(tt, id)
	if err != nil {
		return nil, wrap("list transcript trash", id, "", err)
	}
	type key struct{ batch, uuid string }
	byKey := map[key]*TrashedTranscript{}
	seqs := map[key]int{}
	var keys []key
	for _, f := range files {
		k := key{f.batch, f.uuid()}
		t := byKey[k]
		if t == nil {
			t = &TrashedTranscript{UUID: k.uuid, Removed: f.removed, Batch: f.batch}
			byKey[k], seqs[k] = t, f.seq
			keys = append(keys, k)
		}
		t.Size += f.size
		t.Files++
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := byKey[keys[i]], byKey[keys[j]]
		if !a.Removed.Equal(b.Removed) {
			return a.Removed.After(b.Removed)
		}
		if seqs[keys[i]] != seqs[keys[j]] {
			return seqs[keys[i]] > seqs[keys[j]]
		}
		return a.UUID < b.UUID
	})
	out := make([]TrashedTranscript, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out, nil
}

// RestoreTranscript moves the newest removed copy of conversation uuid (its transcript and its <uuid>/ folder)
// back into the canonical folder. Nothing present is overwritten: a name that exists again is an error. The
// canonical folder is resolved beneath the session with no symlink followed.
func (s *Store) RestoreTranscript(id, uuid string) (restored []string, err error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if uuid == "" || strings.ContainsAny(uuid, "/\x00") || uuid == "." || uuid == ".." {
		return nil, &Error{Op: "restore", ID: id, Path: printable(uuid), Kind: ErrOutside}
	}
	list, err := s.TrashedTranscripts(id)
	if err != nil {
		return nil, err
	}
	batch := ""
	for _, t := range list {
		if t.UUID == uuid {
			batch = t.Batch // the newest: the list is sorted newest first
			break
		}
	}
	if batch == "" {
		return nil, &Error{Op: "restore", ID: id, Err: fmt.Errorf("no conversation %q in the session's trash (see sessionfs trash ls %s)", printable(uuid), id)}
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	uid, gid, err := sess.Owner()
	if err != nil {
		return nil, wrap("restore", id, "", err)
	}
	tt, err := s.transcriptTrashDir()
	if err != nil {
		return nil, wrap("restore", id, "", err)
	}
	defer tt.Close()
	files, err := s.trashedFiles(tt, id)
	if err != nil {
		return nil, wrap("restore", id, "", err)
	}
	canonical := ProjectsDir + "/" + CanonicalProject
	for _, f := range files {
		if f.batch != batch || f.uuid() != uuid {
			continue
		}
		dst := canonical + "/" + f.rel
		if err := sess.MkdirAll(path.Dir(dst), 0o755, uid, gid); err != nil {
			return restored, wrap("restore", id, f.rel, err)
		}
		if err := tt.RenameTo(f.loc, sess, dst, unix.RENAME_NOREPLACE); err != nil {
			if errors.Is(err, syscall.EEXIST) {
				return restored, &Error{Op: "restore", ID: id, Path: f.rel, Kind: fs.ErrExist}
			}
			return restored, wrap("restore", id, f.rel, err)
		}
		restored = append(restored, f.rel)
	}
	removeEmptyDirs(tt, id+"/"+batch, 0)
	return restored, nil
}

// removeEmptyDirs removes rel beneath d and the folders under it that are empty.
func removeEmptyDirs(d *Dir, rel string, depth int) {
	if depth > maxUsageDepth {
		return
	}
	ents, _ := d.ReadDir(rel)
	for _, e := range ents {
		if e.IsDir() {
			removeEmptyDirs(d, rel+"/"+e.Name(), depth+1)
		}
	}
	_ = d.Remove(rel) // fails while not empty, as it should
}

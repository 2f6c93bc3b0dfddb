package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Transcripts removed through the mount wait in <store>/trash/transcripts/<id>/<batch>/<path in the canonical
// folder>, one batch per second of removal, until `gc --trash`. Claude Code deletes old transcripts at start-up,
// and people rm the wrong thing: nothing is lost.

// TranscriptTrashDir is where session id's removed transcripts wait.
func (s *Store) TranscriptTrashDir(id string) string {
	return filepath.Join(s.TrashDir(), "transcripts", id)
}

const batchLayout = "20060102T150405Z"

// TrashTranscript moves rel (a path inside the session's canonical transcript folder) into the session's
// transcript trash, keeping its place in the folder.
func (s *Store) TrashTranscript(id, rel string, now time.Time) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if rel == "" || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return &Error{Op: "trash transcript", ID: id, Path: printable(rel), Kind: ErrOutside}
	}
	// The trash holds what sessions made (a removed symlink among it): it is resolved like a session, beneath
	// its folder and through no symlink.
	dst := "transcripts/" + id + "/" + now.UTC().Format(batchLayout) + "/" + rel
	trash, err := OpenDir(s.TrashDir())
	if err != nil {
		return wrap("trash transcript", id, s.TrashDir(), err)
	}
	defer trash.Close()
	if err := trash.MkdirAll(filepath.Dir(dst), 0o700, -1, -1); err != nil {
		return wrap("trash transcript", id, dst, err)
	}
	if _, err := trash.Lstat(dst); err == nil {
		dst += fmt.Sprintf(".%d", now.UnixNano()) // removed twice within a second
	}
	return wrap("trash transcript", id, rel, s.renameOut(id, ProjectsDir+"/"+CanonicalProject+"/"+rel, trash, dst))
}

// renameOut moves rel, inside session id, to dst beneath the store folder to. Both are resolved beneath their
// folders and never through a symlink: a session cannot make us move a file from or to outside the store.
func (s *Store) renameOut(id, rel string, to *Dir, dst string) error {
	sessions, err := OpenDir(s.SessionsDir())
	if err != nil {
		return err
	}
	defer sessions.Close()
	pfd, name, err := sessions.Parent(id + "/" + rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	tfd, tname, err := to.Parent(dst)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	return unix.Renameat2(pfd, name, tfd, tname, unix.RENAME_NOREPLACE)
}

// TrashedTranscript is a conversation waiting in a session's transcript trash.
type TrashedTranscript struct {
	UUID    string    `json:"uuid"`
	Removed time.Time `json:"removed"`
	Size    int64     `json:"size"`
	Batch   string    `json:"batch"`
	Files   int       `json:"files"` // the transcript, and what of its <uuid>/ folder was removed
}

// TrashedTranscripts lists a session's removed conversations, newest first.
func (s *Store) TrashedTranscripts(id string) ([]TrashedTranscript, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	batches, err := os.ReadDir(s.TranscriptTrashDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("list transcript trash", id, "", err)
	}
	var out []TrashedTranscript
	for _, b := range batches {
		removed, err := time.Parse(batchLayout, b.Name())
		if err != nil {
			continue
		}
		byUUID := map[string]*TrashedTranscript{}
		dir := filepath.Join(s.TranscriptTrashDir(id), b.Name())
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			uuid, _, _ := strings.Cut(rel, string(filepath.Separator))
			uuid = strings.TrimSuffix(uuid, ".jsonl")
			t := byUUID[uuid]
			if t == nil {
				t = &TrashedTranscript{UUID: uuid, Removed: removed, Batch: b.Name()}
				byUUID[uuid] = t
			}
			if fi, err := d.Info(); err == nil {
				t.Size += fi.Size()
			}
			t.Files++
			return nil
		})
		for _, t := range byUUID {
			out = append(out, *t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Removed.Equal(out[j].Removed) {
			return out[i].Removed.After(out[j].Removed)
		}
		return out[i].UUID < out[j].UUID
	})
	return out, nil
}

// RestoreTranscript moves the newest removed copy of conversation uuid (its transcript and its <uuid>/ folder)
// back into the canonical folder. Nothing present is overwritten: a name that exists again is an error.
func (s *Store) RestoreTranscript(id, uuid string) (restored []string, err error) {
	p, err := s.Paths(id)
	if err != nil {
		return nil, err
	}
	if uuid == "" || strings.ContainsAny(uuid, "/\x00") || uuid == "." || uuid == ".." {
		return nil, &Error{Op: "restore", ID: id, Path: printable(uuid), Kind: ErrOutside}
	}
	trashed, err := s.TrashedTranscripts(id)
	if err != nil {
		return nil, err
	}
	for _, t := range trashed {
		if t.UUID != uuid {
			continue
		}
		batch := filepath.Join(s.TranscriptTrashDir(id), t.Batch)
		err := filepath.WalkDir(batch, func(src string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(batch, src)
			if first, _, _ := strings.Cut(rel, string(filepath.Separator)); first != uuid+".jsonl" && first != uuid {
				return nil
			}
			dst := filepath.Join(p.Canonical, rel)
			if _, err := os.Lstat(dst); err == nil {
				return &Error{Op: "restore", ID: id, Path: rel, Kind: fs.ErrExist}
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.Rename(src, dst); err != nil {
				return err
			}
			restored = append(restored, rel)
			return nil
		})
		if err != nil {
			return restored, wrap("restore", id, "", err)
		}
		removeEmptyDirs(batch)
		return restored, nil
	}
	return nil, &Error{Op: "restore", ID: id, Err: fmt.Errorf("no conversation %q in the session's trash (see sessionfs trash ls %s)", printable(uuid), id)}
}

// removeEmptyDirs removes dir and the folders under it that are empty.
func removeEmptyDirs(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir) // fails while not empty, as it should
}

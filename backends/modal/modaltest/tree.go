package modaltest

import (
	"path"
	"sort"
	"strings"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// file is an entry of a Volume: a file (blocks), a folder or a symlink.
type file struct {
	kind   pb.FileEntry_FileType
	blocks []string // hex SHA-256
	size   uint64
	mode   uint32
	mtime  uint64 // whole seconds
	target string // a symlink's
}

// tree is a Volume as a directory tree (keyed by path, every parent a folder): as on Modal, a file is never put
// where a folder is, nor beneath a file.
type tree map[string]*file

// put adds f at p, making its missing parent folders, as VolumePutFiles2 does; it refuses to overwrite a folder
// with a file, or to put one beneath a file or a symlink.
func (t tree) put(p string, f *file, now uint64) error {
	if err := t.check(p); err != nil {
		return err
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if _, ok := t[dir]; !ok {
			t[dir] = &file{kind: pb.FileEntry_DIRECTORY, mode: 0o755, mtime: now}
		}
	}
	t[p] = f
	return nil
}

// check says whether a file may be put at p.
func (t tree) check(p string) error {
	if e, ok := t[p]; ok && e.kind == pb.FileEntry_DIRECTORY {
		return status.Errorf(codes.FailedPrecondition, "%s: is a directory, which a file cannot overwrite", p)
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if e, ok := t[dir]; ok && e.kind != pb.FileEntry_DIRECTORY {
			return status.Errorf(codes.FailedPrecondition, "%s: %s is not a directory", p, dir)
		}
	}
	return nil
}

// remove removes p (with what it holds if recursive), as VolumeRemoveFile2 does.
func (t tree) remove(p string, recursive bool) error {
	e, ok := t[p]
	if !ok {
		return status.Errorf(codes.NotFound, "%s not found", p)
	}
	if e.kind == pb.FileEntry_DIRECTORY {
		under := t.under(p)
		if len(under) > 0 && !recursive {
			return status.Errorf(codes.FailedPrecondition, "%s: directory not empty", p)
		}
		for _, q := range under {
			delete(t, q)
		}
	}
	delete(t, p)
	return nil
}

// force puts f at p whatever is in the way, as a sandbox's own filesystem lets it (rm -r, then write).
func (t tree) force(p string, f *file, now uint64) {
	if e, ok := t[p]; ok && e.kind == pb.FileEntry_DIRECTORY && f.kind != pb.FileEntry_DIRECTORY {
		_ = t.remove(p, true)
	}
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if e, ok := t[dir]; ok && e.kind != pb.FileEntry_DIRECTORY {
			delete(t, dir)
		}
	}
	if e, ok := t[p]; ok && e.kind == pb.FileEntry_DIRECTORY && f.kind == pb.FileEntry_DIRECTORY {
		return
	}
	_ = t.put(p, f, now)
}

// under lists the paths beneath folder p.
func (t tree) under(p string) []string {
	var out []string
	for q := range t {
		if strings.HasPrefix(q, p+"/") {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

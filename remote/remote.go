// Package remote syncs a session with its copy elsewhere: another machine's store over ssh (sftp), or an
// S3-compatible bucket. Both sides are compared with the last state they agreed on (a manifest kept beside the
// store's sessions): a change on one side moves to the other, a conversation both sides appended to is joined
// line by line (merge.Lines), and any other file changed on both sides keeps both. Nothing a remote says is
// trusted: its names, sizes and contents are checked before anything is written, and everything local is written
// beneath the session's folder descriptor.
package remote

import (
	"context"
	"errors"
	"io"
	"path"
	"strings"
	"time"
)

// File is a regular file as one side lists it.
type File struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"` // ns
	Mode  uint32 `json:"mode"`  // permission bits
}

// Remote is one session's copy on another machine or in a bucket. Every rel is a slash path relative to the
// session's folder, checked by Valid; a Remote refuses any other.
type Remote interface {
	// List lists the copy's regular files (links, devices and folders are not listed); a copy that does not exist
	// yet is empty, not an error.
	List(ctx context.Context) (map[string]File, error)
	// Get writes rel's bytes to w: exactly f.Size bytes (f as List gave it), or an error, never more.
	Get(ctx context.Context, rel string, f File, w io.Writer) error
	// Put makes rel hold the size bytes r yields, atomically (a reader of the copy sees the old file or the new
	// one, never a part), with f's mode and mtime. was is what rel must be now (nil: absent); when rel changed
	// since it was listed, Put returns ErrChanged and leaves it alone. It returns rel as List will give it.
	Put(ctx context.Context, rel string, r io.Reader, f File, was *File) (File, error)
	// Append appends tail to rel, which must be was now (else ErrChanged), atomically when the remote can
	// (ok false: it cannot here, Put instead). It returns rel as List will give it.
	Append(ctx context.Context, rel string, tail []byte, was File) (after File, ok bool, err error)
	// Remove removes rel if it is still was; gone already is fine.
	Remove(ctx context.Context, rel string, was File) error
	// Commit makes what was put and removed visible where the remote holds it back until then (a bucket's
	// manifest); it is called once, at the end of a sync that went well.
	Commit(ctx context.Context) error
	// Close ends the connection.
	Close() error
	// String names the copy for messages (the URL it was opened with).
	String() string
}

// ErrChanged says a remote file changed while the sync ran: the next sync compares again.
var ErrChanged = errors.New("changed on the remote while the sync ran; sync again")

// Valid reports whether rel is a name a remote may give: a clean relative slash path of at most 4096 bytes,
// with no "..", "." or empty part, no part over 255 bytes and no NUL.
func Valid(rel string) bool {
	if rel == "" || len(rel) > 4096 || strings.ContainsRune(rel, 0) || rel[0] == '/' || path.Clean(rel) != rel {
		return false
	}
	for _, p := range strings.Split(rel, "/") {
		if p == "" || p == "." || p == ".." || len(p) > 255 {
			return false
		}
	}
	return true
}

// time is f's mtime as a time.
func (f File) time() time.Time { return time.Unix(0, f.Mtime) }

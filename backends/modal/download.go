package modal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"sync"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/merge"
)

// download fetches a file's blocks in order into a temporary file beside rel (beneath d, its folders made with
// the session's owner), with mode perm, and renames it over rel: whatever rel was, a symlink too, is replaced,
// never followed.
func (s *Syncer) download(ctx context.Context, d *layout.Dir, rel string, perm uint32) error {
	return s.downloadAs(ctx, d, rel, rel, perm)
}

// downloadAs is download of the Volume's file from to rel.
func (s *Syncer) downloadAs(ctx context.Context, d *layout.Dir, from, rel string, perm uint32) error {
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := d.MkdirAll(dir, 0o755, uid, gid); err != nil {
			return fmt.Errorf("pull %s: %w", rel, err)
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.fetch(ctx, from, -1, pw)) }()
	err = d.WriteAtomicFrom(rel, pr, perm, uid, gid, time.Time{})
	pr.CloseWithError(io.ErrClosedPipe) // ends the fetcher if the write stopped early
	if err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	return nil
}

// fetch writes the Volume's file rel to w, block by block, each block fetched whole and retried as the official
// client does (5 attempts from 0.1 s). A block shorter than its place in the file (a Volume stores blocks without
// their trailing zeros) is padded back with zeros. A file over limit bytes (limit >= 0) is refused.
func (s *Syncer) fetch(ctx context.Context, rel string, limit int64, w io.Writer) error {
	resp, err := s.cp.VolumeGetFile2(ctx, pb.VolumeGetFile2Request_builder{VolumeId: s.volumeID, Path: rel}.Build())
	if isNotFound(err) {
		return fmt.Errorf("pull %s: %w", rel, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("pull %s: %w", rel, Explain(err, s.client.Config))
	}
	size := int64(resp.GetSize())
	if limit >= 0 && size > limit {
		return fmt.Errorf("pull %s: %d bytes, more than the %d allowed", rel, size, limit)
	}
	urls := resp.GetGetUrls()
	if want := (size + BlockSize - 1) / BlockSize; int64(len(urls)) != want {
		return fmt.Errorf("pull %s: %d bytes in %d blocks", rel, size, len(urls))
	}
	for i, url := range urls {
		want := min(BlockSize, size-int64(i)*BlockSize)
		data, err := s.getBlock(ctx, url, want)
		if err != nil {
			return fmt.Errorf("pull %s: %w", rel, err)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		if pad := want - int64(len(data)); pad > 0 {
			if _, err := w.Write(make([]byte, pad)); err != nil {
				return err
			}
		}
		s.progress(want)
	}
	return nil
}

// getBlock downloads one block of at most want bytes, retrying.
func (s *Syncer) getBlock(ctx context.Context, url string, want int64) ([]byte, error) {
	var last error
	delay := 100 * time.Millisecond
	for attempt := 0; attempt < 5; attempt++ {
		data, err := s.getOnce(ctx, url, want)
		if err == nil {
			return data, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
	return nil, last
}

func (s *Syncer) getOnce(ctx context.Context, url string, want int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("block download: %s", resp.Status)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, want+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > want {
		return nil, fmt.Errorf("block download: more than the block's %d bytes", want)
	}
	return buf.Bytes(), nil
}

// maxJoin bounds each copy of a conversation a sync joins in memory (merge.Lines); a larger one is kept beside
// as any file changed on both sides is. Joins run one at a time (joining), so a sync holds at most the two copies
// and their join of one conversation, whatever the Volume holds.
const maxJoin = 64 << 20

var joining sync.Mutex

// join makes the conversation file rel beneath d the line by line union of it and the Volume's copy
// (merge.Lines): a conversation both sides added to keeps every turn of both. The Volume's copy is fetched whole
// (at most maxJoin bytes) before anything is written. When the union only adds lines after this side's (the
// usual case: the Volume's turns came later), they are appended to the file in place, so an agent writing to it
// meanwhile loses nothing; otherwise the file is replaced atomically with perm, unless it changed since it was
// read (then it is an error, and the next sync joins again).
func (s *Syncer) join(ctx context.Context, d *layout.Dir, rel string, perm uint32) error {
	joining.Lock()
	defer joining.Unlock()
	var theirs bytes.Buffer
	if err := s.fetch(ctx, rel, maxJoin, &theirs); err != nil {
		return err
	}
	before, err := d.Lstat(rel)
	if err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	ours, err := d.ReadRegular(rel, maxJoin)
	if err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	if !merge.Joinable(ours, theirs.Bytes()) {
		// Too many lines to join in bounded memory: the Volume's copy is kept beside, as for any other file.
		uid, gid, err := d.Owner()
		if err != nil {
			return err
		}
		return d.WriteAtomic(rel+".sessionfs-conflict-"+s.label(), theirs.Bytes(), perm, uid, gid)
	}
	joined := merge.Conversation(ours, theirs.Bytes())
	if tail, ok := bytes.CutPrefix(joined, ours); ok {
		return appendTo(d, rel, tail)
	}
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	if now, err := d.Lstat(rel); err != nil || now.Size != before.Size || now.Mtim != before.Mtim || now.Ino != before.Ino {
		return fmt.Errorf("pull %s: it changed while it was joined with the Volume's; sync again", rel)
	}
	if err := d.WriteAtomic(rel, joined, perm, uid, gid); err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	return nil
}

// appendTo appends b to the regular file rel beneath d (never through a link, never opening a FIFO's writer end
// to wait).
func appendTo(d *layout.Dir, rel string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	fd, err := d.OpenAt(rel, unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("pull %s: not a regular file", rel)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	return nil
}

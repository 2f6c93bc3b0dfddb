package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"
)

// List gives the manifest as it was read at open.
func (s *S3) List(ctx context.Context) (map[string]File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]File, len(s.listed))
	for rel, f := range s.listed {
		out[rel] = f
	}
	return out, nil
}

// current is rel's pending entry if it is still was (nil: absent), else ErrChanged. Call with s.mu held.
func (s *S3) current(rel string, was *File) (s3Entry, error) {
	e, ok := s.pending[rel]
	if was == nil && !ok || was != nil && ok && sameFile(e.file(), *was) {
		return e, nil
	}
	return s3Entry{}, fmt.Errorf("s3: %s: %w", rel, ErrChanged)
}

// Get writes rel's blocks out one at a time, each checked against its name before a byte of it is written.
func (s *S3) Get(ctx context.Context, rel string, f File, w io.Writer) error {
	if !Valid(rel) {
		return fmt.Errorf("s3: invalid name %q", rel)
	}
	s.mu.Lock()
	e, err := s.current(rel, &f)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	left := e.Size
	for _, h := range e.Blocks {
		b, err := s.getBlock(ctx, h, min(left, s3BlockSize))
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		s.progress(len(b))
		left -= int64(len(b))
	}
	return nil
}

// getBlock fetches block h from the session's own folder: want plain bytes, or an error.
func (s *S3) getBlock(ctx context.Context, h string, want int64) ([]byte, error) {
	obj, err := s.mc.GetObject(ctx, s.bucket, s.dir+"blocks/"+h, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.explain("reading block "+h, err)
	}
	defer obj.Close()
	c, err := io.ReadAll(io.LimitReader(obj, s3MaxCompressed+1))
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, fmt.Errorf("s3: block %s is missing from %sblocks/", h, s.dir)
	} else if err != nil {
		return nil, s.explain("reading block "+h, err)
	}
	if len(c) > s3MaxCompressed {
		return nil, fmt.Errorf("s3: block %s is over %d bytes compressed: refused", h, s3MaxCompressed)
	}
	p, err := s.dec.DecodeAll(c, make([]byte, 0, s3BlockSize))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, fmt.Errorf("s3: block %s decompresses past %d MiB: refused", h, s3BlockSize>>20)
	} else if err != nil {
		return nil, fmt.Errorf("s3: block %s: %w", h, err)
	}
	if int64(len(p)) != want {
		return nil, fmt.Errorf("s3: block %s holds %d bytes, the manifest says %d", h, len(p), want)
	}
	if sum := sha256.Sum256(p); hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("s3: block %s does not hash to its name: tampered or damaged", h)
	}
	return p, nil
}

// Put cuts exactly f.Size bytes of r into blocks and uploads those the folder lacks; Commit makes rel visible.
func (s *S3) Put(ctx context.Context, rel string, r io.Reader, f File, was *File) (File, error) {
	if !Valid(rel) {
		return File{}, fmt.Errorf("s3: invalid name %q", rel)
	}
	if f.Size < 0 {
		return File{}, fmt.Errorf("s3: %s: size %d", rel, f.Size)
	}
	s.mu.Lock()
	_, err := s.current(rel, was)
	s.mu.Unlock()
	if err != nil {
		return File{}, err
	}
	// Only f.Size bytes: a log appended to while it is read yields the prefix f describes.
	hashes, err := s.store(ctx, io.LimitReader(r, f.Size), f.Size)
	if err != nil {
		return File{}, fmt.Errorf("s3: %s: %w", rel, err)
	}
	e := s3Entry{Size: f.Size, Mtime: f.Mtime, Mode: f.Mode & 0o777, Blocks: hashes}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.current(rel, was); err != nil {
		return File{}, err
	}
	s.pending[rel], s.dirty = e, true
	return e.file(), nil
}

// Append re-cuts rel's last, partial block with tail, keeping the blocks before it.
func (s *S3) Append(ctx context.Context, rel string, tail []byte, was File) (File, bool, error) {
	if !Valid(rel) {
		return File{}, true, fmt.Errorf("s3: invalid name %q", rel)
	}
	s.mu.Lock()
	e, err := s.current(rel, &was)
	s.mu.Unlock()
	if err != nil || len(tail) == 0 {
		return e.file(), true, err
	}
	keep, head := e.Blocks, []byte(nil)
	if part := e.Size % s3BlockSize; part != 0 {
		keep = keep[:len(keep)-1]
		if head, err = s.getBlock(ctx, e.Blocks[len(keep)], part); err != nil {
			return File{}, true, fmt.Errorf("%s: %w", rel, err)
		}
		s.progress(len(head))
	}
	size := int64(len(head) + len(tail))
	hashes, err := s.store(ctx, io.MultiReader(bytes.NewReader(head), bytes.NewReader(tail)), size)
	if err != nil {
		return File{}, true, fmt.Errorf("s3: %s: %w", rel, err)
	}
	// An append changes the mtime, as it would on a disk.
	n := s3Entry{Size: e.Size + int64(len(tail)), Mtime: time.Now().UnixNano(), Mode: e.Mode,
		Blocks: append(slices.Clone(keep), hashes...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.current(rel, &was); err != nil {
		return File{}, true, err
	}
	s.pending[rel], s.dirty = n, true
	return n.file(), true, nil
}

// Remove drops rel from the pending manifest; its blocks go at Commit.
func (s *S3) Remove(ctx context.Context, rel string, was File) error {
	if !Valid(rel) {
		return fmt.Errorf("s3: invalid name %q", rel)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[rel]; !ok {
		return nil
	}
	if _, err := s.current(rel, &was); err != nil {
		return err
	}
	delete(s.pending, rel)
	s.dirty = true
	return nil
}

// store reads size bytes of r in blocks, uploading at most s3UploadsAtOnce at a time those the folder lacks, and
// returns their names.
func (s *S3) store(ctx context.Context, r io.Reader, size int64) ([]string, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s3UploadsAtOnce)
	hashes := []string{}
	var others []*s3Upload // blocks another Put is uploading
	var rerr error
	for left := size; left > 0 && gctx.Err() == nil; {
		buf := make([]byte, min(left, s3BlockSize))
		if _, err := io.ReadFull(r, buf); err != nil {
			rerr = fmt.Errorf("reading the source: %w (it is shorter than %d bytes)", err, size)
			break
		}
		left -= int64(len(buf))
		sum := sha256.Sum256(buf)
		h := hex.EncodeToString(sum[:])
		hashes = append(hashes, h)
		u, mine := s.claim(h)
		if !mine {
			others = append(others, u)
			continue
		}
		g.Go(func() error {
			err := s.putBlock(gctx, h, buf)
			s.finish(h, u, err)
			return err
		})
	}
	err := g.Wait()
	for _, u := range others {
		select {
		case <-u.done:
			err = firstErr(err, u.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err = firstErr(rerr, err); err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return hashes, nil
}

// firstErr is the first error of a and b.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// claim says whether the caller is to upload block h; if not, the upload returned is there or on its way.
func (s *S3) claim(h string) (*s3Upload, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.blocks[h]; ok {
		return u, false
	}
	u := &s3Upload{done: make(chan struct{})}
	s.blocks[h] = u
	return u, true
}

// finish ends upload u of h; a failed one is forgotten, for the next Put to try again.
func (s *S3) finish(h string, u *s3Upload, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.blocks[h] == u {
		delete(s.blocks, h)
	}
	u.err = err
	close(u.done)
}

// putBlock uploads p compressed as block h.
func (s *S3) putBlock(ctx context.Context, h string, p []byte) error {
	c := s.enc.EncodeAll(p, make([]byte, 0, len(p)/2+64))
	_, err := s.mc.PutObject(ctx, s.bucket, s.dir+"blocks/"+h, bytes.NewReader(c), int64(len(c)),
		minio.PutObjectOptions{ContentType: "application/zstd"})
	if err != nil {
		return s.explain("uploading block "+h, err)
	}
	s.uploads.Add(1)
	s.progress(len(p))
	return nil
}

// Commit writes the pending manifest in one PutObject, unless another sync wrote one since open, then removes the
// blocks it no longer names.
func (s *S3) Commit(ctx context.Context) error {
	s.mu.Lock()
	files := make(map[string]s3Entry, len(s.pending))
	for rel, e := range s.pending {
		files[rel] = e
	}
	dirty := s.dirty
	s.mu.Unlock()
	// Unchanged, the manifest is left alone: rewriting it would fail another sync running now for nothing.
	if dirty {
		body, err := json.Marshal(s3Manifest{Version: 1, ID: s.id, Files: files})
		if err != nil {
			return err
		}
		if len(body) > s3MaxManifest {
			return fmt.Errorf("s3: %s: the manifest would be %d bytes, over the %d MiB bound", s.url, len(body), s3MaxManifest>>20)
		}
		etag, err := s.putManifest(ctx, body)
		if err != nil {
			return err
		}
		s.etag = etag
	}
	s.mu.Lock()
	s.dirty = false
	s.listed = make(map[string]File, len(files))
	used := map[string]bool{}
	for rel, e := range files {
		s.listed[rel] = e.file()
		for _, h := range e.Blocks {
			used[h] = true
		}
	}
	var drop []string
	for h, u := range s.blocks {
		if !used[h] && uploadDone(u) {
			drop = append(drop, h)
			delete(s.blocks, h)
		}
	}
	s.mu.Unlock()
	return s.removeBlocks(ctx, drop)
}

// uploadDone reports whether u finished well.
func uploadDone(u *s3Upload) bool {
	select {
	case <-u.done:
		return u.err == nil
	default:
		return false
	}
}

// putManifest writes body as the manifest if it is still the one read at open, and returns its new ETag.
func (s *S3) putManifest(ctx context.Context, body []byte) (string, error) {
	key := s.dir + "manifest.json"
	info, err := s.mc.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	switch code := minio.ToErrorResponse(err).Code; {
	case code == "NoSuchKey" || code == "NotFound":
		if s.etag != "" {
			return "", fmt.Errorf("s3: %s: the manifest was removed: %w", s.url, ErrChanged)
		}
	case err != nil:
		return "", s.explain("checking the manifest", err)
	case info.ETag != s.etag:
		return "", fmt.Errorf("s3: %s: another sync wrote the manifest: %w", s.url, ErrChanged)
	}
	// The check above leaves a moment open: a bucket that can closes it with a conditional write.
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	if s.etag != "" {
		opts.SetMatchETag(s.etag)
	} else {
		opts.SetMatchETagExcept("*")
	}
	put, err := s.mc.PutObject(ctx, s.bucket, key, bytes.NewReader(body), int64(len(body)), opts)
	if code := minio.ToErrorResponse(err).Code; code == "NotImplemented" {
		put, err = s.mc.PutObject(ctx, s.bucket, key, bytes.NewReader(body), int64(len(body)),
			minio.PutObjectOptions{ContentType: "application/json"})
	} else if code == "PreconditionFailed" || code == "ConditionalRequestConflict" {
		return "", fmt.Errorf("s3: %s: another sync wrote the manifest: %w", s.url, ErrChanged)
	}
	if err != nil {
		return "", s.explain("writing the manifest", err)
	}
	return put.ETag, nil
}

// removeBlocks deletes the blocks named; a failure leaves garbage the next Commit removes.
func (s *S3) removeBlocks(ctx context.Context, hs []string) error {
	if len(hs) == 0 {
		return nil
	}
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for _, h := range hs {
			select {
			case ch <- minio.ObjectInfo{Key: s.dir + "blocks/" + h}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var err error
	for e := range s.mc.RemoveObjects(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		err = firstErr(err, e.Err)
	}
	if err != nil {
		return fmt.Errorf("s3: %s: committed, but removing unreferenced blocks failed: %w", s.url, err)
	}
	return nil
}

package modal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"golang.org/x/sync/errgroup"

	"github.com/sessionfs/sessionfs/layout"
)

// upload is one file offered to the Volume: its blocks' hashes, and how to read a block again to send it.
type upload struct {
	rel    string
	size   int64
	mode   uint32
	blocks []string // hex SHA-256 of each block, as sent
	lens   []int    // bytes of each block sent
	open   func() (io.ReaderAt, func(), error)
}

// uploadOfFile hashes the first size bytes of the regular file rel beneath d (the size its walk saw: bytes
// appended since are left for the next push, so the hashes and the blocks sent agree).
func uploadOfFile(d *layout.Dir, rel string, size int64, mode uint32) (*upload, error) {
	u := &upload{rel: rel, size: size, mode: mode, open: func() (io.ReaderAt, func(), error) {
		f, err := d.OpenRegular(rel, -1)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}}
	r, done, err := u.open()
	if err != nil {
		return nil, err
	}
	defer done()
	u.blocks, u.lens, err = hashBlocks(r, size)
	return u, err
}

// uploadOfData offers data as the file rel.
func uploadOfData(rel string, data []byte, mode uint32) *upload {
	r := bytes.NewReader(data)
	u := &upload{rel: rel, size: int64(len(data)), mode: mode,
		open: func() (io.ReaderAt, func(), error) { return r, func() {}, nil }}
	u.blocks, u.lens, _ = hashBlocks(r, u.size)
	return u
}

// hashBlocks hashes the first size bytes of r by BlockSize blocks, each without its trailing zero bytes, as the
// official client hashes and sends them (_find_end_of_block in modal/_utils/blob_utils.py): the Volume names blocks
// so, and pads them back when it is read.
func hashBlocks(r io.ReaderAt, size int64) ([]string, []int, error) {
	var hashes []string
	var lens []int
	buf := make([]byte, BlockSize)
	for off := int64(0); off < size; off += BlockSize {
		data, err := readBlockAt(r, buf, off, size)
		if err != nil {
			return nil, nil, err
		}
		data = bytes.TrimRight(data, "\x00")
		sum := sha256.Sum256(data)
		hashes = append(hashes, hex.EncodeToString(sum[:]))
		lens = append(lens, len(data))
	}
	return hashes, lens, nil
}

// readBlockAt reads the block at off (of a file of size bytes) into buf and returns what is sent of it.
func readBlockAt(r io.ReaderAt, buf []byte, off, size int64) ([]byte, error) {
	n := int(min(BlockSize, size-off))
	got, err := r.ReadAt(buf[:n], off)
	if got < n {
		if err == nil || err == io.EOF {
			err = errShrunk
		}
		return nil, err
	}
	return buf[:n], nil
}

// errShrunk: the file is shorter than when it was walked (truncated or replaced meanwhile).
var errShrunk = errors.New("the file changed while it was sent")

// putBatch is how many files one VolumePutFiles2 carries (the official client sends a whole batch in one call).
const putBatch = 500

// putFiles commits ups to the Volume as the official client does (_put_file_specs of modal/volume.py): a
// VolumePutFiles2 for many files at once, the blocks it reports missing uploaded to their URLs in parallel, and the
// call again with each upload's response, until nothing is missing. It returns the blocks and bytes sent.
func (s *Syncer) putFiles(ctx context.Context, ups []*upload) (int, int64, error) {
	blocks, sent := 0, int64(0)
	for len(ups) > 0 {
		batch := ups[:min(putBatch, len(ups))]
		ups = ups[len(batch):]
		b, n, err := s.putBatch(ctx, batch)
		blocks += b
		sent += n
		if err != nil {
			return blocks, sent, err
		}
	}
	return blocks, sent, nil
}

func (s *Syncer) putBatch(ctx context.Context, ups []*upload) (int, int64, error) {
	responses := map[string][]byte{} // block hash -> the upload's response, the Volume's proof
	var mu sync.Mutex
	blocks, sent := 0, int64(0)
	for round := 0; round < 3; round++ {
		files := make([]*pb.VolumePutFiles2Request_File, len(ups))
		for i, u := range ups {
			bs := make([]*pb.VolumePutFiles2Request_Block, len(u.blocks))
			for j, h := range u.blocks {
				sum, _ := hex.DecodeString(h)
				b := pb.VolumePutFiles2Request_Block_builder{ContentsSha256: sum}
				if r, ok := responses[h]; ok {
					b.PutResponse = r
				}
				bs[j] = b.Build()
			}
			mode := u.mode
			files[i] = pb.VolumePutFiles2Request_File_builder{Path: u.rel, Size: uint64(u.size), Mode: &mode, Blocks: bs}.Build()
		}
		resp, err := s.cp.VolumePutFiles2(ctx, pb.VolumePutFiles2Request_builder{VolumeId: s.volumeID, Files: files}.Build())
		if err != nil {
			return blocks, sent, Explain(err, s.client.Config)
		}
		missing := resp.GetMissingBlocks()
		if len(missing) == 0 {
			return blocks, sent, nil
		}
		var todo int64
		for _, mb := range missing {
			if fi, bi := int(mb.GetFileIndex()), int(mb.GetBlockIndex()); fi < len(ups) && bi < len(ups[fi].lens) {
				todo += int64(ups[fi].lens[bi])
			}
		}
		s.total(todo)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, mb := range missing {
			fi, bi := int(mb.GetFileIndex()), int(mb.GetBlockIndex())
			if fi >= len(ups) || bi >= len(ups[fi].blocks) {
				return blocks, sent, fmt.Errorf("the Volume asked for block %d of file %d, which was not offered", bi, fi)
			}
			u := ups[fi]
			g.Go(func() error {
				data, err := u.readBlock(bi)
				if err != nil {
					return fmt.Errorf("push %s: %w", u.rel, err)
				}
				body, err := s.putBlock(gctx, mb.GetPutUrl(), data)
				if err != nil {
					return fmt.Errorf("push %s: %w", u.rel, err)
				}
				mu.Lock()
				responses[u.blocks[bi]] = body
				blocks++
				sent += int64(len(data))
				mu.Unlock()
				s.progress(int64(len(data)))
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return blocks, sent, err
		}
	}
	return blocks, sent, errors.New("the Volume kept asking for the same blocks")
}

// readBlock reads block i again for sending, and checks it is still what was hashed.
func (u *upload) readBlock(i int) ([]byte, error) {
	r, done, err := u.open()
	if err != nil {
		return nil, err
	}
	defer done()
	buf := make([]byte, BlockSize)
	data, err := readBlockAt(r, buf, int64(i)*BlockSize, u.size)
	if err != nil {
		return nil, err
	}
	data = data[:u.lens[i]]
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != u.blocks[i] {
		return nil, errShrunk
	}
	return data, nil
}

// putBlock uploads one block to its presigned URL, retrying with backoff (as the official client does, 11
// attempts from 0.5 s), and returns the response body, which the Volume wants back as proof of the upload.
func (s *Syncer) putBlock(ctx context.Context, url string, data []byte) ([]byte, error) {
	var last error
	delay := 500 * time.Millisecond
	for attempt := 0; attempt < 11; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		resp, err := s.http.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode/100 == 2 {
				return body, nil
			}
			err = fmt.Errorf("block upload: %s", resp.Status)
			if resp.StatusCode/100 == 4 {
				return nil, err // refused: trying again will not help
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
	return nil, last
}

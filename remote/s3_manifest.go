package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// s3Manifest is what <prefix>/<id>/manifest.json holds.
type s3Manifest struct {
	Version int                `json:"version"`
	ID      string             `json:"id"`
	Files   map[string]s3Entry `json:"files"`
}

// s3Entry is one file: its blocks' names in order, each block 4 MiB but the last.
type s3Entry struct {
	Size   int64    `json:"size"`
	Mtime  int64    `json:"mtime"`
	Mode   uint32   `json:"mode"`
	Blocks []string `json:"blocks"`
}

func (e s3Entry) file() File { return File{Size: e.Size, Mtime: e.Mtime, Mode: e.Mode} }

// sameFile reports whether a and b are the same version of a file, as was is compared.
func sameFile(a, b File) bool {
	return a.Size == b.Size && a.Mtime == b.Mtime && a.Mode&0o777 == b.Mode&0o777
}

// s3Blocks is how many blocks size bytes take, without overflowing near MaxInt64.
func s3Blocks(size int64) int64 {
	n := size / s3BlockSize
	if size%s3BlockSize != 0 {
		n++
	}
	return n
}

// s3Counter counts what passes through it, to tell a manifest at the bound from one past it.
type s3Counter struct {
	r io.Reader
	n int64
}

func (c *s3Counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readManifest reads and checks the session's manifest; a missing one is empty. It returns its ETag.
func (s *S3) readManifest(ctx context.Context) (map[string]s3Entry, string, error) {
	key := s.dir + "manifest.json"
	obj, err := s.mc.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, "", s.explain("reading the manifest", err)
	}
	defer obj.Close()
	info, err := obj.Stat()
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return map[string]s3Entry{}, "", nil
	} else if err != nil {
		return nil, "", s.explain("reading the manifest", err)
	}
	if info.Size > s3MaxManifest {
		return nil, "", fmt.Errorf("s3: %s: manifest is %d bytes, over the %d MiB bound: refused", s.url, info.Size, s3MaxManifest>>20)
	}
	c := &s3Counter{r: io.LimitReader(obj, s3MaxManifest+1)}
	m, err := parseS3Manifest(c)
	if c.n > s3MaxManifest {
		return nil, "", fmt.Errorf("s3: %s: manifest is over the %d MiB bound: refused", s.url, s3MaxManifest>>20)
	}
	if err != nil {
		return nil, "", fmt.Errorf("s3: %s: bad manifest %s: %w", s.url, key, err)
	}
	if m.ID != s.id {
		return nil, "", fmt.Errorf("s3: %s: manifest %s is session %q's, not %q: refused", s.url, key, m.ID, s.id)
	}
	return m.Files, info.ETag, nil
}

// parseS3Manifest decodes a manifest a file at a time, so that its entries are counted before they are all held,
// and checks every one.
func parseS3Manifest(r io.Reader) (*s3Manifest, error) {
	d := json.NewDecoder(r)
	if err := jsonDelim(d, '{'); err != nil {
		return nil, err
	}
	m := &s3Manifest{Files: map[string]s3Entry{}}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if seen[key] {
			return nil, fmt.Errorf("%q given twice", key)
		}
		seen[key] = true
		switch key {
		case "version":
			err = d.Decode(&m.Version)
		case "id":
			err = d.Decode(&m.ID)
		case "files":
			err = parseS3Files(d, m.Files)
		default:
			var skip json.RawMessage
			err = d.Decode(&skip)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := jsonDelim(d, '}'); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the manifest")
	}
	if m.Version != 1 {
		return nil, fmt.Errorf("version %d, not 1", m.Version)
	}
	return m, nil
}

// parseS3Files reads the files object into files, checking each entry.
func parseS3Files(d *json.Decoder, files map[string]s3Entry) error {
	if err := jsonDelim(d, '{'); err != nil {
		return err
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		rel, _ := t.(string)
		var e s3Entry
		if err := d.Decode(&e); err != nil {
			return fmt.Errorf("file %q: %w", rel, err)
		}
		if err := checkS3Entry(rel, &e); err != nil {
			return err
		}
		if _, dup := files[rel]; dup {
			return fmt.Errorf("file %q listed twice", rel)
		}
		if len(files) >= s3MaxEntries {
			return fmt.Errorf("more than %d files", s3MaxEntries)
		}
		files[rel] = e
	}
	return jsonDelim(d, '}')
}

// checkS3Entry refuses a name or entry no sync of ours could have written.
func checkS3Entry(rel string, e *s3Entry) error {
	if !Valid(rel) {
		return fmt.Errorf("file name %q is not a clean relative path", rel)
	}
	if e.Size < 0 {
		return fmt.Errorf("file %q: size %d", rel, e.Size)
	}
	if int64(len(e.Blocks)) != s3Blocks(e.Size) {
		return fmt.Errorf("file %q: %d bytes need %d blocks, it names %d", rel, e.Size, s3Blocks(e.Size), len(e.Blocks))
	}
	for _, h := range e.Blocks {
		if !validS3Hash(h) {
			return fmt.Errorf("file %q: block name %q is not a sha256 in hex", rel, h)
		}
	}
	e.Mode &= 0o777
	return nil
}

// jsonDelim reads the delimiter want.
func jsonDelim(d *json.Decoder, want json.Delim) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("want %q, found %v", want, t)
	}
	return nil
}

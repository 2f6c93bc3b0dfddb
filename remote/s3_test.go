package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
)

// countingRT counts the response body bytes the client reads: what a bound must hold down.
type countingRT struct{ n atomic.Int64 }

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if resp != nil {
		resp.Body = &countedBody{resp.Body, &c.n}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

const testURL = "s3://" + testBucket + "/team/a"

// openT opens session id at testURL, counting the bytes read and the plain bytes moved.
func openT(t *testing.T, id string) (*S3, *countingRT, *atomic.Int64) {
	t.Helper()
	rt := &countingRT{}
	s, err := openS3(context.Background(), testURL, id, rt)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	t.Cleanup(func() { s.Close() })
	moved := &atomic.Int64{}
	s.Progress = func(n int64) { moved.Add(n) }
	return s, rt, moved
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func putT(t *testing.T, s *S3, rel string, b []byte, mtime int64, was *File) File {
	t.Helper()
	f, err := s.Put(context.Background(), rel, bytes.NewReader(b), File{Size: int64(len(b)), Mtime: mtime, Mode: 0o640}, was)
	if err != nil {
		t.Fatalf("put %s: %v", rel, err)
	}
	return f
}

func getT(t *testing.T, s *S3, rel string, f File) []byte {
	t.Helper()
	var w bytes.Buffer
	if err := s.Get(context.Background(), rel, f, &w); err != nil {
		t.Fatalf("get %s: %v", rel, err)
	}
	return w.Bytes()
}

func commitT(t *testing.T, s *S3) {
	t.Helper()
	if err := s.Commit(context.Background()); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// keys lists the object names under the session's folder.
func keys(t *testing.T, under string) []string {
	var out []string
	for o := range testClient(t).ListObjects(context.Background(), testBucket, minio.ListObjectsOptions{Prefix: under, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, under))
	}
	return out
}

func TestS3RoundTrip(t *testing.T) {
	startS3(t)
	want := map[string][]byte{
		"a.txt":             []byte("hello\n"),
		"empty":             {},
		"big/b.bin":         random(t, 9<<20+123),
		"sub/dir/c.jsonl":   bytes.Repeat([]byte(`{"x":1}`+"\n"), 1000),
		"exactly-one-block": random(t, 4<<20),
	}
	s, _, moved := openT(t, "s1")
	if l, _ := s.List(context.Background()); len(l) != 0 {
		t.Fatalf("a new session lists %v", l)
	}
	listed := map[string]File{}
	var total int64
	for rel, b := range want {
		listed[rel] = putT(t, s, rel, b, 1700000000123456789, nil)
		total += int64(len(b))
	}
	if moved.Load() != total {
		t.Errorf("progress said %d bytes, sent %d", moved.Load(), total)
	}
	commitT(t, s)
	s.Close()

	got := keys(t, "team/a/s1/")
	if len(got) != 1+3+1+1+1 || !strings.Contains(strings.Join(got, " "), "manifest.json") {
		t.Errorf("bucket holds %v", got)
	}
	s2, _, moved2 := openT(t, "s1")
	l, _ := s2.List(context.Background())
	if !maps.Equal(l, listed) {
		t.Fatalf("list %v, want %v", l, listed)
	}
	for rel, b := range want {
		if g := getT(t, s2, rel, l[rel]); !bytes.Equal(g, b) {
			t.Errorf("%s: got %d bytes, want %d", rel, len(g), len(b))
		}
	}
	if moved2.Load() != total {
		t.Errorf("progress said %d bytes received, want %d", moved2.Load(), total)
	}
}

func TestS3ResumeUploadsNoBlockTwice(t *testing.T) {
	startS3(t)
	b := random(t, 10<<20)
	s, _, _ := openT(t, "s1")
	putT(t, s, "log", b, 1, nil)
	if n := s.uploads.Load(); n != 3 {
		t.Fatalf("uploaded %d blocks, want 3", n)
	}
	s.Close() // killed before Commit

	s2, _, moved := openT(t, "s1")
	if l, _ := s2.List(context.Background()); len(l) != 0 {
		t.Fatalf("an uncommitted put shows: %v", l)
	}
	putT(t, s2, "log", b, 1, nil)
	if n := s2.uploads.Load(); n != 0 || moved.Load() != 0 {
		t.Fatalf("the rerun uploaded %d blocks, %d bytes", n, moved.Load())
	}
	// Blocks repeated within a file go up once.
	putT(t, s2, "zeros", make([]byte, 12<<20), 1, nil)
	if n := s2.uploads.Load(); n != 1 {
		t.Fatalf("12 MiB of zeros took %d uploads", n)
	}
	commitT(t, s2)

	s3, _, _ := openT(t, "s1")
	l, _ := s3.List(context.Background())
	if f, ok := l["log"]; !ok || !bytes.Equal(getT(t, s3, "log", f), b) {
		t.Fatalf("after commit: %v", l)
	}
}

func TestS3RemoveAndChanged(t *testing.T) {
	startS3(t)
	ctx := context.Background()
	s, _, _ := openT(t, "s1")
	fa := putT(t, s, "a", []byte("aaa"), 1, nil)
	fb := putT(t, s, "b", random(t, 5<<20), 1, nil)
	commitT(t, s)
	s.Close()

	s, _, _ = openT(t, "s1")
	if _, err := s.Put(ctx, "a", strings.NewReader("x"), File{Size: 1}, nil); !errors.Is(err, ErrChanged) {
		t.Errorf("put over a file said absent: %v", err)
	}
	stale := fa
	stale.Mtime++
	if _, err := s.Put(ctx, "a", strings.NewReader("x"), File{Size: 1}, &stale); !errors.Is(err, ErrChanged) {
		t.Errorf("put over a changed file: %v", err)
	}
	if _, err := s.Put(ctx, "new", strings.NewReader("x"), File{Size: 1}, &stale); !errors.Is(err, ErrChanged) {
		t.Errorf("put over an absent file said present: %v", err)
	}
	if err := s.Remove(ctx, "a", stale); !errors.Is(err, ErrChanged) {
		t.Errorf("remove of a changed file: %v", err)
	}
	if err := s.Get(ctx, "a", stale, io.Discard); !errors.Is(err, ErrChanged) {
		t.Errorf("get of a changed file: %v", err)
	}
	if err := s.Remove(ctx, "gone", fa); err != nil {
		t.Errorf("remove of an absent file: %v", err)
	}
	if _, err := s.Put(ctx, "short", strings.NewReader("abc"), File{Size: 10}, nil); err == nil || !strings.Contains(err.Error(), "shorter than 10 bytes") {
		t.Errorf("put of a short source: %v", err)
	}
	if _, err := s.Put(ctx, "../x", strings.NewReader(""), File{}, nil); err == nil {
		t.Error("put of ../x worked")
	}
	// A second put of the same file compares with the first.
	fa2 := putT(t, s, "a", []byte("bbbb"), 2, &fa)
	putT(t, s, "a", []byte("ccccc"), 3, &fa2)
	if err := s.Remove(ctx, "b", fb); err != nil {
		t.Fatal(err)
	}
	commitT(t, s)
	s.Close()
	if got := keys(t, "team/a/s1/blocks/"); len(got) != 1 || got[0] != hashOf([]byte("ccccc")) {
		t.Errorf("after commit the blocks are %v, want only c's", got)
	}

	// Two syncs at once: the second to commit is told to sync again.
	s, _, _ = openT(t, "s1")
	o, _, _ := openT(t, "s1")
	l, _ := s.List(ctx)
	if _, ok := l["b"]; ok || len(l) != 1 {
		t.Fatalf("list %v", l)
	}
	putT(t, s, "x", []byte("1"), 1, nil)
	putT(t, o, "y", []byte("2"), 1, nil)
	commitT(t, s)
	if err := o.Commit(ctx); !errors.Is(err, ErrChanged) {
		t.Errorf("a commit over another sync's: %v", err)
	}

	// A commit with nothing to write leaves the manifest alone, failing no other sync.
	s, _, _ = openT(t, "s1")
	o, _, _ = openT(t, "s1")
	commitT(t, o)
	putT(t, s, "z", []byte("3"), 1, nil)
	commitT(t, s)
}

func TestS3Append(t *testing.T) {
	startS3(t)
	ctx := context.Background()
	s, _, _ := openT(t, "s1")
	head := random(t, 4<<20+10)
	f := putT(t, s, "log", head, 1, nil)
	n := s.uploads.Load()
	after, ok, err := s.Append(ctx, "log", []byte("tail\n"), f)
	if err != nil || !ok {
		t.Fatalf("append: %v %v", ok, err)
	}
	if s.uploads.Load() != n+1 || after.Size != f.Size+5 {
		t.Errorf("append uploaded %d blocks, size %d", s.uploads.Load()-n, after.Size)
	}
	if _, _, err := s.Append(ctx, "log", []byte("x"), f); !errors.Is(err, ErrChanged) {
		t.Errorf("append to a changed file: %v", err)
	}
	commitT(t, s)
	s2, _, _ := openT(t, "s1")
	l, _ := s2.List(ctx)
	if got := getT(t, s2, "log", l["log"]); !bytes.Equal(got, append(head, "tail\n"...)) || l["log"] != after {
		t.Errorf("after append: %d bytes, %v", len(got), l["log"])
	}
}

// hostile is a test bucket where objects are written by hand.
type hostile struct {
	t  *testing.T
	mc *minio.Client
}

func (h hostile) put(key string, b []byte) {
	h.t.Helper()
	if _, err := h.mc.PutObject(context.Background(), testBucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// manifest writes session id's manifest with one file.
func (h hostile) manifest(id, ownerID, rel string, size int64, blocks ...string) {
	h.t.Helper()
	m := s3Manifest{Version: 1, ID: ownerID, Files: map[string]s3Entry{rel: {Size: size, Mode: 0o644, Blocks: blocks}}}
	b, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	h.put("team/a/"+id+"/manifest.json", b)
}

func zstdOf(b []byte) []byte {
	e, _ := zstd.NewWriter(nil)
	defer e.Close()
	return e.EncodeAll(b, nil)
}

// openFails asserts that opening session id fails saying want.
func openFails(t *testing.T, id, want string) {
	t.Helper()
	s, err := openS3(context.Background(), testURL, id, nil)
	if err == nil {
		s.Close()
		t.Fatalf("open of %s worked, want %q", id, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("open of %s: %v, want %q", id, err, want)
	}
}

// getFails asserts Get of the one file fails saying want, writes nothing past wrote, and reads at most read bytes.
func getFails(t *testing.T, id, want string, wrote, read int64) {
	t.Helper()
	s, rt, _ := openT(t, id)
	l, _ := s.List(context.Background())
	if len(l) != 1 {
		t.Fatalf("list %v", l)
	}
	for rel, f := range l {
		var w countingWriter
		rt.n.Store(0)
		err := s.Get(context.Background(), rel, f, &w)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("get: %v, want %q", err, want)
		}
		if w.n > wrote || rt.n.Load() > read {
			t.Fatalf("get wrote %d bytes (bound %d), read %d (bound %d)", w.n, wrote, rt.n.Load(), read)
		}
		t.Logf("%s: %v (wrote %d, read %d)", id, err, w.n, rt.n.Load())
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func TestS3Hostile(t *testing.T) {
	startS3(t)
	h := hostile{t, testClient(t)}
	block := random(t, 1000)
	sum := hashOf(block)
	const slack = 64 << 10

	h.manifest("dotdot", "dotdot", "../x", 0)
	openFails(t, "dotdot", `"../x" is not a clean relative path`)

	h.manifest("theirs", "someone-else", "a", 0)
	openFails(t, "theirs", `session "someone-else"'s, not "theirs"`)

	h.manifest("pathblock", "pathblock", "a", 1000, "../other/blocks/"+sum)
	openFails(t, "pathblock", "is not a sha256 in hex")

	h.manifest("fewblocks", "fewblocks", "a", 5<<20, sum)
	openFails(t, "fewblocks", "need 2 blocks, it names 1")

	// The block is there, but in another session's folder: it is only looked for in the session's own.
	h.put("team/a/other/blocks/"+sum, zstdOf(block))
	h.manifest("elsewhere", "elsewhere", "a", 1000, sum)
	getFails(t, "elsewhere", "is missing from team/a/elsewhere/blocks/", 0, slack)

	other := random(t, 1000)
	h.put("team/a/tampered/blocks/"+sum, zstdOf(other))
	h.manifest("tampered", "tampered", "a", 1000, sum)
	getFails(t, "tampered", "does not hash to its name", 0, slack)

	// 64 MiB of zeros compress to a few KiB; with and without the size in the frame's header.
	zeros := make([]byte, 64<<20)
	sum4 := hashOf(zeros[:4<<20])
	h.put("team/a/bomb/blocks/"+sum4, zstdOf(zeros))
	h.manifest("bomb", "bomb", "a", 4<<20, sum4)
	getFails(t, "bomb", "decompresses past 4 MiB", 0, slack)
	var stream bytes.Buffer
	zw, _ := zstd.NewWriter(&stream)
	zw.Write(zeros)
	zw.Close()
	h.put("team/a/bomb2/blocks/"+sum4, stream.Bytes())
	h.manifest("bomb2", "bomb2", "a", 4<<20, sum4)
	getFails(t, "bomb2", "decompresses past 4 MiB", 0, slack)

	// A small window and no size in the header: only the output bound stops it.
	stream.Reset()
	zw, _ = zstd.NewWriter(&stream, zstd.WithWindowSize(1<<20))
	zw.Write(zeros)
	zw.Close()
	var hdr zstd.Header
	if err := hdr.Decode(stream.Bytes()); err != nil || hdr.HasFCS || hdr.WindowSize > 4<<20 {
		t.Fatalf("bomb3's header: %+v %v", hdr, err)
	}
	h.put("team/a/bomb3/blocks/"+sum4, stream.Bytes())
	h.manifest("bomb3", "bomb3", "a", 4<<20, sum4)
	getFails(t, "bomb3", "decompresses past 4 MiB", 0, slack)

	h.put("team/a/huge/blocks/"+sum, random(t, 20<<20))
	h.manifest("huge", "huge", "a", 1000, sum)
	getFails(t, "huge", "compressed: refused", 0, s3MaxCompressed+slack)

	// 1 TiB in 262144 blocks: the first is real, the second missing; Get stops there, having held one block.
	first := random(t, 4<<20)
	names := make([]string, 1<<40/(4<<20))
	for i := range names {
		names[i] = strings.Repeat("0", 64)
	}
	names[0] = hashOf(first)
	h.put("team/a/tera/blocks/"+names[0], zstdOf(first))
	h.manifest("tera", "tera", "a", 1<<40, names...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	getFails(t, "tera", "is missing", 4<<20, 2*(s3MaxCompressed+slack))
	runtime.ReadMemStats(&after)
	t.Logf("tera: open and get allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if after.TotalAlloc-before.TotalAlloc > 512<<20 {
		t.Errorf("a 1 TiB claim made us allocate %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	}

	// 100 MiB of manifest, refused before a byte of it is read.
	big := append([]byte(`{"version":1,"id":"bigm","files":{},"pad":"`), bytes.Repeat([]byte("x"), 100<<20)...)
	h.put("team/a/bigm/manifest.json", append(big, `"}`...))
	rt := &countingRT{}
	if _, err := openS3(context.Background(), testURL, "bigm", rt); err == nil || !strings.Contains(err.Error(), "over the 64 MiB bound") {
		t.Fatalf("100 MiB manifest: %v", err)
	}
	if rt.n.Load() > s3MaxManifest+slack {
		t.Fatalf("100 MiB manifest: read %d bytes", rt.n.Load())
	}
	t.Logf("100 MiB manifest refused, read %d bytes", rt.n.Load())
}

// TestS3ManifestEntries needs no server: a manifest is refused at its first entry past the bound, lowered here
// (a million entries take 40 s under -race).
func TestS3ManifestEntries(t *testing.T) {
	defer func(n int) { s3MaxEntries = n }(s3MaxEntries)
	s3MaxEntries = 1000
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprint(pw, `{"version":1,"id":"s","files":{`)
		for i := range s3MaxEntries + 1 {
			if i > 0 {
				fmt.Fprint(pw, ",")
			}
			fmt.Fprintf(pw, `"f%d":{"size":0,"mtime":0,"mode":420,"blocks":[]}`, i)
		}
		pw.CloseWithError(errors.New("read past the bound"))
	}()
	if _, err := parseS3Manifest(pr); err == nil || !strings.Contains(err.Error(), "more than 1000 files") {
		t.Fatalf("got %v", err)
	}
	pr.Close()
	for _, bad := range []string{
		`{"version":2,"id":"s","files":{}}`,
		`{"version":1,"id":"s","files":{"a":{"size":-1,"blocks":[]}}}`,
		`{"version":1,"id":"s","files":{"a":{"size":0,"blocks":[]},"a":{"size":0,"blocks":[]}}}`,
		`{"version":1,"id":"s","files":{"a/./b":{"size":0,"blocks":[]}}}`,
		`{"version":1,"id":"s","files":{"a":{"size":1,"blocks":["` + strings.Repeat("A", 64) + `"]}}}`,
		`{"version":1,"id":"s","files":{}}{}`,
	} {
		if _, err := parseS3Manifest(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	m, err := parseS3Manifest(strings.NewReader(`{"version":1,"id":"s","files":{"a":{"size":0,"mode":4294967295,"blocks":[]}}}`))
	if err != nil || m.Files["a"].Mode != 0o777 {
		t.Fatalf("mode not masked: %v %v", m, err)
	}
}

func TestS3OpenErrors(t *testing.T) {
	endpoint := startS3(t)
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "a/b", strings.Repeat("x", 129), "a b"} {
		if _, err := OpenS3(ctx, testURL, id); err == nil || !strings.Contains(err.Error(), "invalid session id") {
			t.Errorf("id %q: %v", id, err)
		}
	}
	for _, u := range []string{"s3:///x", "http://b/x", "s3://b/../x"} {
		if _, err := OpenS3(ctx, u, "s"); err == nil {
			t.Errorf("url %q opened", u)
		}
	}
	if _, err := OpenS3(ctx, "s3://no-such-bucket/x", "s"); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}

	// The shared credentials file, with AWS_PROFILE.
	home := t.TempDir()
	creds := filepath.Join(home, "credentials")
	os.WriteFile(creds, []byte("[ci]\naws_access_key_id = "+testAccess+"\naws_secret_access_key = "+testSecret+"\n"), 0o600)
	t.Setenv("HOME", home)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "ci")
	s, err := OpenS3(ctx, testURL, "s")
	if err != nil {
		t.Fatalf("with a profile: %v", err)
	}
	s.Close()

	t.Setenv("AWS_PROFILE", "none")
	if _, err := OpenS3(ctx, testURL, "s"); err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("without credentials: %v", err)
	}
	t.Setenv("AWS_PROFILE", "ci")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	os.WriteFile(creds, []byte("[ci]\naws_access_key_id = "+testAccess+"\naws_secret_access_key = wrong\n"), 0o600)
	if _, err := OpenS3(ctx, testURL, "s"); err == nil || !strings.Contains(err.Error(), "check the AWS credentials") {
		t.Errorf("wrong secret: %v", err)
	}

	closed := freeAddr(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+closed)
	if _, err := OpenS3(ctx, testURL, "s"); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("endpoint refused: %v", err)
	}
	_ = endpoint
}

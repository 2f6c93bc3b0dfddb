package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Bounds on what a bucket may make us read or hold: it may be another person's.
const (
	s3BlockSize     = 4 << 20
	s3MaxCompressed = s3BlockSize + 64<<10 // zstd's worst case for 4 MiB is a few hundred bytes over
	s3MaxManifest   = 64 << 20
	s3MaxBlocks     = 10_000_000
	s3UploadsAtOnce = 4
)

// s3MaxEntries bounds a manifest's files; a var for the test of the bound.
var s3MaxEntries = 1_000_000

// S3 is one session's copy in an S3-compatible bucket: <prefix>/<id>/manifest.json names each file's blocks,
// <prefix>/<id>/blocks/<sha256> holds each block zstd-compressed. Nothing is visible before Commit.
type S3 struct {
	// Progress, when set, is told the plain bytes sent or received; calls come one at a time.
	Progress func(n int64)

	url, id, bucket, dir string
	mc                   *minio.Client
	enc                  *zstd.Encoder
	dec                  *zstd.Decoder
	etag                 string // the manifest's at open; "" when there was none

	mu      sync.Mutex
	listed  map[string]File    // as read at open
	pending map[string]s3Entry // what Commit will write
	dirty   bool               // pending differs from what was read
	blocks  map[string]*s3Upload
	pmu     sync.Mutex // serialises Progress

	uploads atomic.Int64 // blocks uploaded, for the tests
}

// s3Upload is a block in the session's folder (done closed, err nil) or on its way there.
type s3Upload struct {
	done chan struct{}
	err  error
}

var _ Remote = (*S3)(nil)

// OpenS3 opens session id's copy at url, s3://bucket/prefix, reading its manifest and listing its blocks.
func OpenS3(ctx context.Context, url, id string) (*S3, error) {
	return openS3(ctx, url, id, nil)
}

// openS3 is OpenS3 with the HTTP transport the tests count bytes with.
func openS3(ctx context.Context, rawurl, id string, rt http.RoundTripper) (*S3, error) {
	if !validS3ID(id) {
		return nil, fmt.Errorf("s3: invalid session id %q", id)
	}
	bucket, prefix, err := parseS3URL(rawurl)
	if err != nil {
		return nil, err
	}
	endpoint, secure, custom, err := s3Endpoint()
	if err != nil {
		return nil, err
	}
	creds, err := s3Creds(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	opts := &minio.Options{Creds: creds, Secure: secure, Transport: rt, Region: os.Getenv("AWS_REGION")}
	if opts.Region == "" {
		opts.Region = os.Getenv("AWS_DEFAULT_REGION")
	}
	if custom {
		opts.BucketLookup = minio.BucketLookupPath
	}
	mc, err := minio.New(endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("s3: endpoint %s: %w", endpoint, err)
	}
	s := &S3{url: rawurl, id: id, bucket: bucket, dir: id + "/", mc: mc, blocks: map[string]*s3Upload{}}
	if prefix != "" {
		s.dir = prefix + "/" + id + "/"
	}
	s.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(s3UploadsAtOnce))
	s.dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(s3UploadsAtOnce),
		zstd.WithDecoderMaxMemory(s3BlockSize), zstd.WithDecodeAllCapLimit(true))
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// open reads the manifest and lists the blocks already in the session's folder.
func (s *S3) open(ctx context.Context) error {
	files, etag, err := s.readManifest(ctx)
	if err != nil {
		return err
	}
	s.etag = etag
	s.listed = make(map[string]File, len(files))
	s.pending = make(map[string]s3Entry, len(files))
	for rel, e := range files {
		s.listed[rel] = e.file()
		s.pending[rel] = e
	}
	done := make(chan struct{})
	close(done)
	n := 0
	for o := range s.mc.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.dir + "blocks/", Recursive: true}) {
		if o.Err != nil {
			return s.explain("listing blocks", o.Err)
		}
		if n++; n > s3MaxBlocks {
			return fmt.Errorf("s3: %s: more than %d blocks in %sblocks/", s.url, s3MaxBlocks, s.dir)
		}
		if h := strings.TrimPrefix(o.Key, s.dir+"blocks/"); validS3Hash(h) {
			s.blocks[h] = &s3Upload{done: done}
		}
	}
	return nil
}

// explain turns an S3 error into one that says what is missing.
func (s *S3) explain(doing string, err error) error {
	var op *net.OpError
	switch r := minio.ToErrorResponse(err); {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case r.Code == "NoSuchBucket":
		return fmt.Errorf("s3: %s: bucket %q does not exist at %s", doing, s.bucket, s.mc.EndpointURL().Host)
	case r.Code == "AccessDenied" || r.Code == "InvalidAccessKeyId" || r.Code == "SignatureDoesNotMatch":
		return fmt.Errorf("s3: %s in %s: access refused (%s: %s); check the AWS credentials", doing, s.url, r.Code, r.Message)
	case errors.As(err, &op):
		return fmt.Errorf("s3: %s: endpoint %s unreachable: %w", doing, s.mc.EndpointURL(), err)
	}
	return fmt.Errorf("s3: %s in %s: %w", doing, s.url, err)
}

// parseS3URL splits s3://bucket/prefix; the prefix is cleaned of empty parts.
func parseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("s3: %q is not s3://bucket/prefix", raw)
	}
	var parts []string
	for _, p := range strings.Split(u.Path, "/") {
		switch p {
		case "":
		case ".", "..":
			return "", "", fmt.Errorf("s3: %q: the prefix may not hold . or ..", raw)
		default:
			parts = append(parts, p)
		}
	}
	return u.Host, strings.Join(parts, "/"), nil
}

// s3Endpoint reads the endpoint the AWS tools read; custom says one was given (path-style lookup then).
func s3Endpoint() (host string, secure, custom bool, err error) {
	raw := os.Getenv("AWS_ENDPOINT_URL_S3")
	if raw == "" {
		raw = os.Getenv("AWS_ENDPOINT_URL")
	}
	if raw == "" {
		return "s3.amazonaws.com", true, false, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return "", false, false, fmt.Errorf("s3: AWS_ENDPOINT_URL %q is not http(s)://host[:port]", raw)
	}
	return u.Host, u.Scheme == "https", true, nil
}

// s3Creds finds credentials the AWS way: environment, shared file (AWS_PROFILE), then IAM unless
// AWS_EC2_METADATA_DISABLED=true.
func s3Creds(ctx context.Context, endpoint string) (*credentials.Credentials, error) {
	chain := []credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}}
	if !strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		chain = append(chain, &credentials.IAM{})
	}
	creds := credentials.NewChainCredentials(chain)
	// IAM asks a metadata service that is not there off EC2: do not wait on it for long.
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := creds.GetWithContext(&credentials.CredContext{Client: http.DefaultClient, Endpoint: endpoint, Context: cctx})
	if err != nil {
		return nil, fmt.Errorf("s3: looking for credentials: %w", err)
	}
	if v.SignerType.IsAnonymous() || v.AccessKeyID == "" {
		return nil, errors.New("s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
			"or AWS_PROFILE naming a profile in ~/.aws/credentials, or run with an IAM role")
	}
	return creds, nil
}

// validS3ID reports whether id may name a session's folder.
func validS3ID(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validS3Hash reports whether h is a block's name: 64 lowercase hex digits.
func validS3Hash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range []byte(h) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *S3) String() string { return s.url }

// Close frees the codecs; the HTTP client needs no closing.
func (s *S3) Close() error {
	if s.enc != nil {
		s.enc.Close()
	}
	if s.dec != nil {
		s.dec.Close()
	}
	return nil
}

// progress tells Progress about n bytes.
func (s *S3) progress(n int) {
	if s.Progress != nil && n > 0 {
		s.pmu.Lock()
		defer s.pmu.Unlock()
		s.Progress(int64(n))
	}
}

// HoldsBack says what Put and Remove do is seen only after Commit.
func (s *S3) HoldsBack() bool { return true }

// SetProgress has fn told of each byte sent and received (Sync calls it with its Options.Progress).
func (s *S3) SetProgress(fn func(int64)) { s.Progress = fn }

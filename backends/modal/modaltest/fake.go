// Package modaltest is an in-process fake of Modal's control plane for tests: a gRPC server on 127.0.0.1 that
// implements the Volume RPCs the SDK and sessionfs use (VolumeGetOrCreate, VolumePutFiles2, VolumeGetFile2,
// VolumeListFiles2, VolumeRemoveFile2) with Modal's semantics, and an HTTP store for the presigned block URLs.
package modaltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Token the fake accepts.
const (
	TokenID     = "ak-test"
	TokenSecret = "as-test"
	// OAuth credentials the fake accepts too (an OAuth profile of ~/.modal.toml).
	OAuthRefreshToken = "rt-test"
	OAuthClientID     = "oc-test"
	OAuthClientSecret = "ov-test"
)

// Server is a running fake.
type Server struct {
	pb.UnimplementedModalClientServer
	URL string // for MODAL_SERVER_URL

	mu        sync.Mutex
	volumes   map[string]string // name -> id
	files     map[string]tree   // volume id -> its tree
	blocks    map[string][]byte // hex SHA-256 -> data
	failures  map[string]int    // method suffix -> Unavailable answers still to give
	secrets   map[string]map[string]string
	sandboxes map[string]*sandbox
	deny      bool
	BlocksPut int // blocks uploaded over HTTP

	authToken   string
	headers     map[string]metadata.MD
	calls       map[string]int
	replies     map[string]reply
	lostReplies map[string]int

	commitDelay, backgroundCommits time.Duration
	committed                      int
	lastTimeout                    time.Duration
	failPaths                      map[string]int
	failGets                       int

	grpc  *grpc.Server
	http  *http.Server
	blobs string // base URL of the block store
}

// Start serves a fake on the loopback. Close stops it.
func Start() (*Server, error) {
	s := &Server{volumes: map[string]string{}, files: map[string]tree{}, blocks: map[string][]byte{},
		failures: map[string]int{}, secrets: map[string]map[string]string{}, sandboxes: map[string]*sandbox{},
		headers: map[string]metadata.MD{}, calls: map[string]int{},
		replies: map[string]reply{}, lostReplies: map[string]int{}, failPaths: map[string]int{},
		commitDelay: 300 * time.Millisecond, backgroundCommits: 200 * time.Millisecond}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gl.Close()
		return nil, err
	}
	s.grpc = grpc.NewServer(grpc.UnaryInterceptor(s.check), grpc.StreamInterceptor(s.checkStream))
	pb.RegisterModalClientServer(s.grpc, s)
	s.http = &http.Server{Handler: http.HandlerFunc(s.serveBlock)}
	s.URL = "http://" + gl.Addr().String()
	s.blobs = "http://" + hl.Addr().String()
	go s.grpc.Serve(gl)
	go s.http.Serve(hl)
	return s, nil
}

// Close stops the fake.
func (s *Server) Close() {
	s.grpc.Stop()
	s.http.Close()
}

// FailNext makes the next n calls of method (e.g. "VolumePutFiles2") answer Unavailable.
func (s *Server) FailNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = n
}

// FailRead makes the next n reads (VolumeGetFile2) of path fail.
func (s *Server) FailRead(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failPaths[path] = n
}

// FailBlockGets makes the next n block downloads answer 503.
func (s *Server) FailBlockGets(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failGets = n
}

// Deny makes every call answer PermissionDenied.
func (s *Server) Deny(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny = on
}

// Files lists the files of a volume, sorted.
func (s *Server) Files(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p, f := range s.files[s.volumes[name]] {
		if f.kind == pb.FileEntry_FILE {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// Entry returns the type of a volume's entry (UNSPECIFIED if there is none) and a symlink's target.
func (s *Server) Entry(name, path string) (pb.FileEntry_FileType, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[s.volumes[name]][path]; ok {
		return f.kind, f.target
	}
	return pb.FileEntry_UNSPECIFIED, ""
}

// Write stores a file in a volume as a sandbox's write would (durable when the sandbox ends), with a new mtime;
// whatever is in its way goes, as in the sandbox's filesystem. Writing over a file keeps its mode, as a sandbox's
// write does; a new file is 0644.
func (s *Server) Write(name, path string, data []byte) {
	mode := s.Mode(name, strings.TrimPrefix(path, "/"))
	if mode == 0 {
		mode = 0o644
	}
	s.WriteMode(name, path, data, mode)
}

// WriteMode is Write with the file's mode.
func (s *Server) WriteMode(name, path string, data []byte, mode uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &file{kind: pb.FileEntry_FILE, size: uint64(len(data)), mode: mode, mtime: s.tick()}
	for off := 0; off < len(data); off += blockSize { // an empty file has no block
		block := bytes.TrimRight(data[off:min(off+blockSize, len(data))], "\x00")
		sum := sha256.Sum256(block)
		h := hex.EncodeToString(sum[:])
		s.blocks[h] = append([]byte(nil), block...)
		f.blocks = append(f.blocks, h)
	}
	s.files[s.volumes[name]].force(strings.TrimPrefix(path, "/"), f, s.tick())
}

// Mkdir makes a folder in a volume as a sandbox's mkdir -p would.
func (s *Server) Mkdir(name, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[s.volumes[name]].force(path, &file{kind: pb.FileEntry_DIRECTORY, mode: 0o755, mtime: s.tick()}, s.tick())
}

// Symlink makes a symlink in a volume as a sandbox's ln -sfn would.
func (s *Server) Symlink(name, target, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[s.volumes[name]].force(path, &file{kind: pb.FileEntry_SYMLINK, target: target, size: uint64(len(target)), mode: 0o777, mtime: s.tick()}, s.tick())
}

// Remove deletes an entry (a folder with what it holds) from a volume, as a sandbox's rm -r would.
func (s *Server) Remove(name, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.files[s.volumes[name]].remove(path, true)
}

// Mode returns the mode a volume keeps for a file (listings do not show it).
func (s *Server) Mode(name, path string) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[s.volumes[name]][path]; ok && f.kind == pb.FileEntry_FILE {
		return f.mode
	}
	return 0
}

// Read returns a file's content from a volume.
func (s *Server) Read(name, path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[s.volumes[name]][path]
	if !ok || f.kind != pb.FileEntry_FILE {
		return nil, false
	}
	return s.content(f), true
}

// content is a file's bytes: each block as stored (without its trailing zeros), padded back to its place.
func (s *Server) content(f *file) []byte {
	var out []byte
	for i, h := range f.blocks {
		out = append(out, expand(s.blocks[h], logical(f.size, i))...)
	}
	return out
}

// logical is the length of block i of a file of size bytes.
func logical(size uint64, i int) int { return int(min(blockSize, size-uint64(i)*blockSize)) }

func expand(b []byte, n int) []byte {
	return append(append([]byte(nil), b...), make([]byte, max(0, n-len(b)))...)
}

// blockSize is the Volume's block: 8 MiB, stored and named by the SHA-256 of its bytes without trailing zeros
// (as the official client hashes and uploads them: _find_end_of_block in modal/_utils/blob_utils.py).
const blockSize = 8 << 20

// tick is a write's mtime: whole seconds, as the Volume lists them (FileEntry.mtime).
func (s *Server) tick() uint64 { return uint64(time.Now().Unix()) }

// check enforces what Modal's front end checks of every call (gate), and answers a retried non-idempotent call
// (same idempotency key) with the reply of its first execution, as the service deduplicates them.
func (s *Server) check(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.gate(ctx, info.FullMethod, true); err != nil {
		return nil, err
	}
	name := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	key := ""
	if nonIdempotent[name] {
		md, _ := metadata.FromIncomingContext(ctx)
		key = name + "/" + first(md, "x-idempotency-key")
		s.mu.Lock()
		r, seen := s.replies[key]
		s.mu.Unlock()
		if seen {
			return r.resp, r.err
		}
	}
	resp, err := handler(ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
	if key != "" {
		s.replies[key] = reply{resp, err}
	}
	if s.lostReplies[name] > 0 {
		s.lostReplies[name]--
		return nil, status.Error(codes.Internal, "the connection was reset before the reply")
	}
	return resp, err
}

// nonIdempotent are the calls the service deduplicates by x-idempotency-key: done twice, they would make two
// sandboxes or commit twice.
var nonIdempotent = map[string]bool{"SandboxCreate": true, "VolumePutFiles2": true, "VolumeRemoveFile2": true}

type reply struct {
	resp any
	err  error
}

func (s *Server) checkStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.gate(ss.Context(), info.FullMethod, false); err != nil {
		return err
	}
	return handler(srv, ss)
}

// gate checks what the Go SDK sends with every call (injectRequiredHeaders, authTokenInterceptor and
// retryInterceptor of modal-client/go client.go): its client type (CLIENT_TYPE_LIBMODAL_GO), versions and
// credentials; on unary calls the idempotency key and retry attempt, and the auth token from AuthTokenGet.
func (s *Server) gate(ctx context.Context, method string, unary bool) error {
	md, _ := metadata.FromIncomingContext(ctx)
	name := method[strings.LastIndex(method, "/")+1:]
	if t := first(md, "x-modal-client-type"); t != strconv.Itoa(int(pb.ClientType_CLIENT_TYPE_LIBMODAL_GO)) {
		return status.Errorf(codes.FailedPrecondition, "unsupported client type %q", t)
	}
	if first(md, "x-modal-client-version") == "" || !strings.HasPrefix(first(md, "x-modal-libmodal-version"), "modal-go/") {
		return status.Error(codes.FailedPrecondition, "missing client version headers")
	}
	token := first(md, "x-modal-token-id") == TokenID && first(md, "x-modal-token-secret") == TokenSecret
	oauth := first(md, "x-modal-refresh-token") == OAuthRefreshToken && first(md, "x-modal-oauth-client-id") == OAuthClientID &&
		first(md, "x-modal-oauth-client-secret") == OAuthClientSecret
	if !token && !oauth {
		return status.Error(codes.Unauthenticated, "invalid token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if unary {
		if first(md, "x-idempotency-key") == "" || first(md, "x-retry-attempt") == "" {
			return status.Error(codes.FailedPrecondition, "missing x-idempotency-key or x-retry-attempt")
		}
		if name != "AuthTokenGet" && (s.authToken == "" || first(md, "x-modal-auth-token") != s.authToken) {
			return status.Error(codes.Unauthenticated, "missing or stale x-modal-auth-token")
		}
	}
	s.headers[name] = md.Copy()
	if s.deny {
		return status.Error(codes.PermissionDenied, "this token may not use the workspace")
	}
	if s.failures[name] > 0 {
		s.failures[name]--
		return status.Error(codes.Unavailable, "try again")
	}
	return nil
}

// AuthTokenGet issues the short-lived token the SDK sends with every other unary call: a JWT whose exp it reads.
func (s *Server) AuthTokenGet(ctx context.Context, req *pb.AuthTokenGetRequest) (*pb.AuthTokenGetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claims, _ := json.Marshal(map[string]any{"exp": time.Now().Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	s.authToken = enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "." + enc([]byte(fmt.Sprint(time.Now().UnixNano())))
	return pb.AuthTokenGetResponse_builder{Token: s.authToken}.Build(), nil
}

// Headers returns the metadata of the last call of method (e.g. "VolumePutFiles2").
func (s *Server) Headers(method string) metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[method].Copy()
}

// Calls counts the executions of method (a retry the service deduplicated is not one).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// LoseReplies makes the next n calls of method run, then answer Internal as if the reply was lost on the way: the
// client retries a call the service has already done.
func (s *Server) LoseReplies(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lostReplies[method] = n
}

func (s *Server) VolumeGetOrCreate(ctx context.Context, req *pb.VolumeGetOrCreateRequest) (*pb.VolumeGetOrCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.volumes[req.GetDeploymentName()]
	if !ok {
		if req.GetObjectCreationType() != pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_IF_MISSING {
			return nil, status.Errorf(codes.NotFound, "Volume %q not found", req.GetDeploymentName())
		}
		id = fmt.Sprintf("vo-%d", len(s.volumes)+1)
		s.volumes[req.GetDeploymentName()] = id
		s.files[id] = tree{}
	}
	meta := pb.VolumeMetadata_builder{Version: pb.VolumeFsVersion_VOLUME_FS_VERSION_V2}.Build()
	return pb.VolumeGetOrCreateResponse_builder{VolumeId: id, Version: pb.VolumeFsVersion_VOLUME_FS_VERSION_V2, Metadata: meta}.Build(), nil
}

// VolumePutFiles2 answers with the blocks it lacks and their upload URLs; once every block is there (each with
// the upload's response as proof), the files are committed.
func (s *Server) VolumePutFiles2(ctx context.Context, req *pb.VolumePutFiles2Request) (*pb.VolumePutFiles2Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vol, ok := s.files[req.GetVolumeId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such volume")
	}
	var missing []*pb.VolumePutFiles2Response_MissingBlock
	for fi, f := range req.GetFiles() {
		for bi, b := range f.GetBlocks() {
			h := hex.EncodeToString(b.GetContentsSha256())
			if _, have := s.blocks[h]; have && (len(b.GetPutResponse()) == 0 || string(b.GetPutResponse()) == "stored "+h) {
				continue
			}
			missing = append(missing, pb.VolumePutFiles2Response_MissingBlock_builder{
				FileIndex: uint64(fi), BlockIndex: uint64(bi), PutUrl: s.blobs + "/blocks/" + h}.Build())
		}
	}
	if len(missing) > 0 {
		return pb.VolumePutFiles2Response_builder{MissingBlocks: missing}.Build(), nil
	}
	for _, f := range req.GetFiles() { // all or nothing: a file in the way fails the whole call
		if err := vol.check(strings.TrimPrefix(f.GetPath(), "/")); err != nil {
			return nil, err
		}
	}
	for _, f := range req.GetFiles() {
		nf := &file{kind: pb.FileEntry_FILE, size: f.GetSize(), mode: f.GetMode(), mtime: s.tick()}
		for _, b := range f.GetBlocks() {
			nf.blocks = append(nf.blocks, hex.EncodeToString(b.GetContentsSha256()))
		}
		if err := vol.put(strings.TrimPrefix(f.GetPath(), "/"), nf, s.tick()); err != nil {
			return nil, err
		}
	}
	return pb.VolumePutFiles2Response_builder{}.Build(), nil
}

func (s *Server) VolumeGetFile2(ctx context.Context, req *pb.VolumeGetFile2Request) (*pb.VolumeGetFile2Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPaths[req.GetPath()] > 0 {
		s.failPaths[req.GetPath()]--
		return nil, status.Errorf(codes.FailedPrecondition, "%s cannot be read now", req.GetPath())
	}
	f, ok := s.files[req.GetVolumeId()][strings.TrimPrefix(req.GetPath(), "/")]
	if !ok || f.kind != pb.FileEntry_FILE {
		return nil, status.Errorf(codes.NotFound, "%s not found", req.GetPath())
	}
	urls := make([]string, len(f.blocks))
	for i, h := range f.blocks {
		urls[i] = fmt.Sprintf("%s/blocks/%s?len=%d", s.blobs, h, logical(f.size, i))
	}
	return pb.VolumeGetFile2Response_builder{GetUrls: urls, Size: f.size, Len: f.size}.Build(), nil
}

func (s *Server) VolumeListFiles2(req *pb.VolumeListFiles2Request, stream grpc.ServerStreamingServer[pb.VolumeListFiles2Response]) error {
	s.mu.Lock()
	prefix := strings.Trim(req.GetPath(), "/")
	var entries []*pb.FileEntry
	for p, f := range s.files[req.GetVolumeId()] {
		if prefix != "" && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		// As Modal lists them: a type, a size, a whole-second mtime; no mode, no symlink target.
		entries = append(entries, pb.FileEntry_builder{Path: p, Type: f.kind, Size: f.size, Mtime: f.mtime}.Build())
	}
	s.mu.Unlock()
	for len(entries) > 0 { // several messages, as a large listing streams
		n := min(100, len(entries))
		if err := stream.Send(pb.VolumeListFiles2Response_builder{Entries: entries[:n]}.Build()); err != nil {
			return err
		}
		entries = entries[n:]
	}
	return nil
}

func (s *Server) VolumeRemoveFile2(ctx context.Context, req *pb.VolumeRemoveFile2Request) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.files[req.GetVolumeId()].remove(strings.TrimPrefix(req.GetPath(), "/"), req.GetRecursive()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// serveBlock is the presigned-URL block store: PUT stores a block (checking its hash), GET returns it.
func (s *Server) serveBlock(w http.ResponseWriter, r *http.Request) {
	h := strings.TrimPrefix(r.URL.Path, "/blocks/")
	switch r.Method {
	case http.MethodPut:
		data, err := io.ReadAll(r.Body)
		sum := sha256.Sum256(data)
		if err != nil || hex.EncodeToString(sum[:]) != h {
			http.Error(w, "content does not match its hash", http.StatusBadRequest)
			return
		}
		if len(data) > 0 && data[len(data)-1] == 0 {
			http.Error(w, "a block is sent without its trailing zeros", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.blocks[h] = data
		s.BlocksPut++
		s.mu.Unlock()
		fmt.Fprint(w, "stored "+h)
	case http.MethodGet:
		s.mu.Lock()
		if s.failGets > 0 {
			s.failGets--
			s.mu.Unlock()
			http.Error(w, "slow down", http.StatusServiceUnavailable)
			return
		}
		data, ok := s.blocks[h]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("len"))
		w.Write(expand(data, n))
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

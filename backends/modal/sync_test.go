package modal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/backends/modal/modaltest"
	"github.com/sessionfs/sessionfs/layout"
)

type fixture struct {
	fake  *modaltest.Server
	store *layout.Store
	sync  *Syncer
	dir   string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	fake, err := modaltest.Start()
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	useServer(t, fake.URL)
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = store.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	c, err := Dial(Config{ServerURL: fake.URL, TokenID: modaltest.TokenID, TokenSecret: modaltest.TokenSecret})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := NewSyncer(context.Background(), c, store, "s1")
	require.NoError(t, err)
	return &fixture{fake: fake, store: store, sync: s, dir: store.Dir("s1")}
}

// useServer points the SDK (which reads its server from the environment or the profile) at url, with no profile.
func useServer(t *testing.T, url string) {
	t.Setenv("MODAL_SERVER_URL", url)
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(t.TempDir(), "none.toml"))
	for _, k := range []string{"MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_PROFILE", "MODAL_ENVIRONMENT", "MODAL_SANDBOX_V2"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func (f *fixture) write(t *testing.T, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(f.dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

func (f *fixture) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	require.NoError(t, err)
	return string(b)
}

const transcript = ".claude/projects/-session-workspace/u1.jsonl"

func TestPushIsIncrementalByBlock(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.write(t, "workspace/a.txt", []byte("a"))
	f.write(t, transcript, []byte(`{"type":"user"}`+"\n"))
	big := bytes.Repeat([]byte("0123456789abcdef"), (20<<20)/16) // 20 MiB: 3 blocks
	f.write(t, "workspace/big.bin", big)

	rep, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Files, "a.txt, the transcript, big.bin and session.json")
	assert.Equal(t, 6, f.fake.BlocksPut, "3 blocks of big.bin, 1 each for the others")
	vol := VolumeName("s1")
	assert.Contains(t, f.fake.Files(vol), transcript)
	got, ok := f.fake.Read(vol, "workspace/big.bin")
	require.True(t, ok)
	assert.Equal(t, big, got)

	rep, err = f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Zero(t, rep.Files, "nothing changed, nothing sent")

	// An appended transcript costs one block; a grown big file only its changed last block.
	fh, err := os.OpenFile(filepath.Join(f.dir, transcript), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(`{"type":"assistant"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	before := f.fake.BlocksPut
	rep, err = f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Files)
	assert.Equal(t, 1, f.fake.BlocksPut-before, "exactly one block for an appended transcript")
	f.write(t, "workspace/big.bin", append(big, []byte("tail")...))
	before = f.fake.BlocksPut
	_, err = f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, f.fake.BlocksPut-before, "the first two 8 MiB blocks are already there")

	// A local deletion reaches the Volume.
	require.NoError(t, os.Remove(filepath.Join(f.dir, "workspace/a.txt")))
	rep, err = f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Deleted)
	assert.NotContains(t, f.fake.Files(vol), "workspace/a.txt")
}

func TestPullThreeWay(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	f.write(t, transcript, []byte("line1\n"))
	f.write(t, "workspace/both.txt", []byte("base"))
	f.write(t, "workspace/gone.txt", []byte("x"))
	f.write(t, "workspace/keep-local.txt", []byte("x"))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)

	// The run (a sandbox) appends to the transcript, writes a file, removes two, and edits a file we edit too.
	f.fake.Write(vol, transcript, []byte("line1\nline2\n"))
	f.fake.Write(vol, "workspace/new.txt", []byte("made by the run"))
	f.fake.Remove(vol, "workspace/gone.txt")
	f.fake.Remove(vol, "workspace/keep-local.txt")
	f.fake.Write(vol, "workspace/both.txt", []byte("theirs"))
	f.write(t, "workspace/both.txt", []byte("ours"))
	f.write(t, "workspace/keep-local.txt", []byte("changed here since"))
	f.fake.Write(vol, ".claude/projects/-home-u-proj/u2.jsonl", []byte("from another cwd\n"))

	rep, err := f.sync.Pull(ctx, "run1")
	require.NoError(t, err)
	assert.Equal(t, "line1\nline2\n", f.read(t, transcript))
	assert.Equal(t, "made by the run", f.read(t, "workspace/new.txt"))
	assert.NoFileExists(t, filepath.Join(f.dir, "workspace/gone.txt"))
	assert.Equal(t, "changed here since", f.read(t, "workspace/keep-local.txt"), "a local change is never lost")
	assert.Equal(t, "theirs", f.read(t, "workspace/both.txt"), "the run's version wins")
	assert.Equal(t, "ours", f.read(t, "workspace/both.txt.sessionfs-conflict-run1"), "ours is kept beside it")
	assert.Equal(t, 1, rep.Conflicts)
	assert.Equal(t, "from another cwd\n", f.read(t, ".claude/projects/-session-workspace/u2.jsonl"), "folded into the canonical folder")
	assert.NoDirExists(t, filepath.Join(f.dir, ".claude/projects/-home-u-proj"))
	assert.NotContains(t, f.fake.Files(vol), ".claude/projects/-home-u-proj/u2.jsonl")
	assert.Equal(t, 1, rep.Folded)

	rep, err = f.sync.Pull(ctx, "run2")
	require.NoError(t, err)
	assert.Equal(t, PullReport{}, rep, "a second pull has nothing to do")
	// The next push agrees the rest: the kept local file, the conflict copy, the folded transcript.
	_, err = f.sync.Push(ctx)
	require.NoError(t, err)
	got, _ := f.fake.Read(vol, "workspace/keep-local.txt")
	assert.Equal(t, "changed here since", string(got))
	assert.Contains(t, f.fake.Files(vol), ".claude/projects/-session-workspace/u2.jsonl")
}

func TestErrors(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.write(t, "workspace/a.txt", []byte("a"))
	f.fake.FailNext("VolumePutFiles2", 2)
	_, err := f.sync.Push(ctx)
	require.NoError(t, err, "Unavailable is retried")

	f.fake.Deny(true)
	f.write(t, "workspace/b.txt", []byte("b"))
	_, err = f.sync.Push(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Modal refused the credentials")
	assert.NotContains(t, err.Error(), "\n")
	f.fake.Deny(false)

	c, err := Dial(Config{ServerURL: f.fake.URL, TokenID: "wrong", TokenSecret: "wrong"})
	require.NoError(t, err)
	defer c.Close()
	_, err = NewSyncer(ctx, c, f.store, "s1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused the credentials")

	useServer(t, "http://127.0.0.1:1")
	dead, err := Dial(Config{ServerURL: "http://127.0.0.1:1", TokenID: "x", TokenSecret: "y"})
	require.NoError(t, err)
	defer dead.Close()
	_, err = NewSyncer(ctx, dead, f.store, "s1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach Modal at http://127.0.0.1:1")
}

func TestVolumeName(t *testing.T) {
	assert.Equal(t, "sessionfs-fix-login", VolumeName("fix-login"))
	long1, long2 := VolumeName(strings.Repeat("a", 128)), VolumeName(strings.Repeat("a", 127)+"b")
	assert.LessOrEqual(t, len(long1), 64)
	assert.NotEqual(t, long1, long2)
	assert.Regexp(t, `^[A-Za-z0-9._-]+$`, long1)
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "modal.toml")
	require.NoError(t, os.WriteFile(p, []byte(`
[other]
token_id = "ak-other"
token_secret = "as-other"

[work]
token_id = "ak-work"
token_secret = "as-work"
server_url = "http://127.0.0.1:9"
active = true
`), 0o600))
	t.Setenv("MODAL_CONFIG_PATH", p)
	for _, k := range []string{"MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_SERVER_URL", "MODAL_PROFILE", "MODAL_ENVIRONMENT"} {
		t.Setenv(k, "")
	}
	cfg, err := LoadConfig()
	require.NoError(t, err)
	assert.Equal(t, Config{ServerURL: "http://127.0.0.1:9", TokenID: "ak-work", TokenSecret: "as-work"}, cfg)
	t.Setenv("MODAL_PROFILE", "other")
	t.Setenv("MODAL_TOKEN_SECRET", "from-env")
	cfg, err = LoadConfig()
	require.NoError(t, err)
	assert.Equal(t, "ak-other", cfg.TokenID)
	assert.Equal(t, "from-env", cfg.TokenSecret, "the environment wins")
	t.Setenv("MODAL_CONFIG_PATH", filepath.Join(dir, "none.toml"))
	t.Setenv("MODAL_PROFILE", "")
	t.Setenv("MODAL_TOKEN_SECRET", "")
	_, err = LoadConfig()
	assert.ErrorIs(t, err, ErrNoCredentials)
}

func TestExplain(t *testing.T) {
	cfg := Config{ServerURL: "https://api.modal.com:443"}
	for code, want := range map[codes.Code]string{
		codes.Unavailable:       "cannot reach Modal at https://api.modal.com:443",
		codes.PermissionDenied:  "Modal refused the credentials",
		codes.Unauthenticated:   "Modal refused the credentials",
		codes.ResourceExhausted: "Modal quota exceeded",
		codes.InvalidArgument:   "Modal: InvalidArgument",
	} {
		err := Explain(fmt.Errorf("wrapped: %w", status.Error(code, "detail\nsecond line")), cfg)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
	assert.Nil(t, Explain(nil, cfg))
}

// A session may make any folder of its own a symlink to a host folder, and a sandbox may list any path: push
// never reads through the link, pull never writes through it, and a listed path with ".." is never pulled.
func TestSyncFollowsNoSymlink(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "secret"), []byte("host secret"), 0o600))
	require.NoError(t, os.Symlink(host, filepath.Join(f.dir, "workspace", "out")))
	f.write(t, "workspace/real.txt", []byte("mine"))

	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	for _, p := range f.fake.Files(vol) {
		assert.NotContains(t, p, "secret", "nothing is read through the link")
	}
	assert.Contains(t, f.fake.Files(vol), "workspace/real.txt")

	f.fake.Write(vol, "workspace/out/planted", []byte("from the sandbox"))
	f.fake.Write(vol, "workspace/out/secret", []byte("overwritten"))
	f.fake.Write(vol, "../escape.txt", []byte("from the sandbox"))
	_, _ = f.sync.Pull(ctx, "run1") // an error is fine; a write outside the session is not
	ents, err := os.ReadDir(host)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing was written into the host folder")
	b, err := os.ReadFile(filepath.Join(host, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "host secret", string(b))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(f.dir), "escape.txt"))
	assert.NoFileExists(t, filepath.Join(f.dir, "..", "..", "escape.txt"))
}

// A file changed on the Volume since the last agreed state (a late commit, a failed pull) and changed here is not
// overwritten by a push: both are kept, as a pull keeps them. The Volume's mtimes are whole seconds and the
// contents have the same size: only the mtime tells the change.
func TestPushKeepsVolumeChanges(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	f.write(t, "workspace/both.txt", []byte("v1"))
	f.write(t, "workspace/theirs.txt", []byte("v1"))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)

	f.fake.Write(vol, "workspace/both.txt", []byte("v2"))
	f.fake.Write(vol, "workspace/theirs.txt", []byte("v2"))
	f.write(t, "workspace/both.txt", []byte("v3"))
	f.sync.Label = "push1"
	rep, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Merged.Conflicts)
	for rel, want := range map[string]string{"workspace/both.txt": "v2", "workspace/theirs.txt": "v2", "workspace/both.txt.sessionfs-conflict-push1": "v3"} {
		got, ok := f.fake.Read(vol, rel)
		assert.True(t, ok, rel)
		assert.Equal(t, want, string(got), "the Volume's %s", rel)
		assert.Equal(t, want, f.read(t, rel), "the store's %s", rel)
	}
}

// Modes travel both ways: the upload carries them; the Volume's listing has none, so a pulled file keeps the mode
// agreed, a new one is 0644, and the run's report says which files it left executable.
func TestModesBothWays(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	f.write(t, "workspace/tool.sh", []byte("#!/bin/sh\necho tool\n"))
	require.NoError(t, os.Chmod(filepath.Join(f.dir, "workspace/tool.sh"), 0o755))
	f.write(t, "workspace/private.txt", []byte("p"))
	require.NoError(t, os.Chmod(filepath.Join(f.dir, "workspace/private.txt"), 0o600))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint32(0o755), f.fake.Mode(vol, "workspace/tool.sh"))
	assert.Equal(t, uint32(0o600), f.fake.Mode(vol, "workspace/private.txt"))

	f.fake.Write(vol, "workspace/tool.sh", []byte("#!/bin/sh\necho tool v2\n"))
	f.fake.Write(vol, "workspace/new.txt", []byte("n"))
	_, err = f.sync.Pull(ctx, "run1")
	require.NoError(t, err)
	mode := func(rel string) os.FileMode {
		st, err := os.Stat(filepath.Join(f.dir, rel))
		require.NoError(t, err)
		return st.Mode().Perm()
	}
	assert.Equal(t, os.FileMode(0o755), mode("workspace/tool.sh"), "a pulled script stays executable")
	assert.Equal(t, os.FileMode(0o644), mode("workspace/new.txt"))

	code, err := f.backend(t, Options{}).Run(ctx, backends.Spec{SessionID: "s1", SessionDir: f.dir, Argv: []string{"sh", "-c",
		`test -x tool.sh && ! test -x private.txt && printf '#!/bin/sh\n' > made.sh && chmod +x made.sh new.txt && chmod -x tool.sh`}})
	require.NoError(t, err)
	require.Equal(t, 0, code, "the sandbox sees the modes pushed")
	assert.Equal(t, os.FileMode(0o755), mode("workspace/made.sh"), "made executable by the run")
	assert.Equal(t, os.FileMode(0o755), mode("workspace/new.txt"), "made executable by the run, content unchanged")
	assert.Equal(t, os.FileMode(0o644), mode("workspace/tool.sh"), "no longer executable")
	assert.Equal(t, os.FileMode(0o600), mode("workspace/private.txt"))
}

// The Volume is a tree: it will not put a file where a folder is, nor beneath a file. A file replaced by a folder
// here, a folder by a file, and a file the Volume gained where a folder is here all push.
func TestTypeChanges(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	f.write(t, "workspace/x", []byte("file"))
	f.write(t, "workspace/y/inner.txt", []byte("in a folder"))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)

	require.NoError(t, os.Remove(filepath.Join(f.dir, "workspace/x")))
	f.write(t, "workspace/x/inner.txt", []byte("now a folder"))
	require.NoError(t, os.RemoveAll(filepath.Join(f.dir, "workspace/y")))
	f.write(t, "workspace/y", []byte("now a file"))
	f.write(t, "workspace/z/k.txt", []byte("a folder here"))
	f.fake.Write(vol, "workspace/z", []byte("a file there"))
	f.sync.Label = "p"
	rep, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Merged.Conflicts)
	for rel, want := range map[string]string{"workspace/x/inner.txt": "now a folder", "workspace/y": "now a file",
		"workspace/z/k.txt": "a folder here", "workspace/z.sessionfs-conflict-p": "a file there"} {
		got, ok := f.fake.Read(vol, rel)
		assert.True(t, ok, rel)
		assert.Equal(t, want, string(got), rel)
		assert.Equal(t, want, f.read(t, rel), rel)
	}
	kind, _ := f.fake.Entry(vol, "workspace/z")
	assert.Equal(t, pb.FileEntry_DIRECTORY, kind)
	rep, err = f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Zero(t, rep.Files+rep.Merged.Applied+rep.Merged.Conflicts, "settled")
}

// An interrupted pull keeps what it applied (saved per file): the next pull does not take its own work for local
// changes and make false conflict copies.
func TestInterruptedPullResumes(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	for _, n := range []string{"a", "b", "c"} {
		f.write(t, "workspace/"+n, []byte(n+"1"))
	}
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	for _, n := range []string{"a", "b", "c"} {
		f.fake.Write(vol, "workspace/"+n, []byte(n+"22"))
	}
	f.fake.FailRead("workspace/c", 1)
	_, err = f.sync.Pull(ctx, "run1")
	require.Error(t, err, "c could not be read")
	assert.Equal(t, "a22", f.read(t, "workspace/a"), "applied before the interruption")

	rep, err := f.sync.Pull(ctx, "run2")
	require.NoError(t, err)
	assert.Zero(t, rep.Conflicts, "no false conflicts")
	assert.Equal(t, 1, rep.Applied, "only c is left")
	ents, err := os.ReadDir(filepath.Join(f.dir, "workspace"))
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), "conflict")
	}
	assert.Equal(t, "c22", f.read(t, "workspace/c"))
}

// Blocks are hashed and sent without their trailing zeros, as the official client does: a file the Volume holds
// already (written in a sandbox) costs no upload, a block of zeros sends nothing, and every byte comes back.
func TestBlocksWithoutTrailingZeros(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	padded := append([]byte("header"), make([]byte, 3000)...)
	f.fake.Write(vol, "workspace/from-sandbox.bin", padded)
	f.write(t, "workspace/same.bin", padded)
	sparse := append(make([]byte, 9<<20), 'x') // a block of zeros, then "x" and zeros
	sparse = append(sparse, make([]byte, 100)...)
	f.write(t, "workspace/sparse.bin", sparse)
	before := f.fake.BlocksPut
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	got, ok := f.fake.Read(vol, "workspace/same.bin")
	require.True(t, ok)
	assert.Equal(t, padded, got)
	got, _ = f.fake.Read(vol, "workspace/sparse.bin")
	assert.Equal(t, sparse, got)
	// session.json, the empty block of zeros, the block "x": same.bin's block was on the Volume already.
	assert.Equal(t, 3, f.fake.BlocksPut-before)

	require.NoError(t, os.Remove(filepath.Join(f.dir, "workspace/sparse.bin")))
	f.fake.Write(vol, "workspace/sparse.bin", sparse[1:])
	_, err = f.sync.Pull(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, string(sparse[1:]), f.read(t, "workspace/sparse.bin"))
}

// Many files push in one offer and one commit (not two calls per file); downloads are retried.
func TestBatchesAndRetries(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	for i := range 50 {
		f.write(t, fmt.Sprintf("workspace/f%02d.txt", i), []byte(fmt.Sprint(i)))
	}
	before := f.fake.Calls("VolumePutFiles2")
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, f.fake.Calls("VolumePutFiles2")-before, "one offer, one commit with the uploads' proofs")

	for i := range 10 {
		f.fake.Write(vol, fmt.Sprintf("workspace/f%02d.txt", i), []byte("changed"))
	}
	f.fake.FailBlockGets(3)
	rep, err := f.sync.Pull(ctx, "r")
	require.NoError(t, err, "a failed block download is tried again")
	assert.Equal(t, 10, rep.Applied)
	assert.Equal(t, "changed", f.read(t, "workspace/f09.txt"))
}

// A file appended while a push runs is sent as it was walked (its blocks match their hashes), the append goes with
// the next push; a file removed while a push runs is a deletion, not a failure.
func TestSessionChangesDuringPush(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	f.write(t, transcript, []byte("line1\n"))
	f.write(t, "workspace/gone.txt", []byte("x"))
	f.sync.afterWalk = func() {
		fh, err := os.OpenFile(filepath.Join(f.dir, transcript), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, _ = fh.WriteString("line2\n")
		fh.Close()
		require.NoError(t, os.Remove(filepath.Join(f.dir, "workspace/gone.txt")))
	}
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	got, _ := f.fake.Read(vol, transcript)
	assert.Equal(t, "line1\n", string(got))
	assert.NotContains(t, f.fake.Files(vol), "workspace/gone.txt")
	f.sync.afterWalk = nil
	_, err = f.sync.Push(ctx)
	require.NoError(t, err)
	got, _ = f.fake.Read(vol, transcript)
	assert.Equal(t, "line1\nline2\n", string(got))
}

// Progress has a total: told before the bytes move, it adds up to what moved.
func TestProgressTotals(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	var total, done int64
	f.sync.Total = func(n int64) { total += n }
	f.sync.Progress = func(n int64) { done += n }
	f.write(t, "workspace/a.bin", bytes.Repeat([]byte("a"), 3<<20))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	assert.Greater(t, total, int64(3<<20))
	assert.Equal(t, total, done, "push")
	total, done = 0, 0
	f.fake.Write(VolumeName("s1"), "workspace/b.bin", bytes.Repeat([]byte("b"), 1<<20))
	_, err = f.sync.Pull(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), total)
	assert.Equal(t, total, done, "pull")
}

// The run's report is the sandbox's (hostile): a path with "..", a link or folder through a symlink of the
// session, never reaches outside the session, nor replaces anything here, nor stops the pull.
func TestHostileReport(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	host := t.TempDir()
	require.NoError(t, os.Symlink(host, filepath.Join(f.dir, "workspace", "out")))
	f.write(t, "workspace/mine.txt", []byte("mine"))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)
	f.fake.Write(vol, ".sessionfs-run/exec", []byte("./../../x\x00./workspace/mine.txt\x00"))
	f.fake.Write(vol, ".sessionfs-run/empty", []byte("./../escaped-dir\x00./workspace/out/planted-dir\x00./workspace/made\x00"))
	f.fake.Write(vol, ".sessionfs-run/links", []byte("./../escaped-link\x00/etc\x00./workspace/out/planted\x00/etc\x00"+
		"./workspace/mine.txt\x00/etc/passwd\x00./workspace/new-link\x00target\x00"))
	_, err = f.sync.Pull(ctx, "r")
	require.NoError(t, err)
	ents, err := os.ReadDir(host)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing made through the session's symlink")
	for _, p := range []string{"escaped-dir", "escaped-link"} {
		_, err := os.Lstat(filepath.Join(filepath.Dir(f.dir), p))
		assert.True(t, os.IsNotExist(err), p)
	}
	assert.Equal(t, "mine", f.read(t, "workspace/mine.txt"), "a file is never replaced by a link")
	assert.DirExists(t, filepath.Join(f.dir, "workspace/made"))
	target, err := os.Readlink(filepath.Join(f.dir, "workspace/new-link"))
	require.NoError(t, err)
	assert.Equal(t, "target", target)
	kind, _ := f.fake.Entry(vol, ".sessionfs-run/exec")
	assert.Equal(t, pb.FileEntry_UNSPECIFIED, kind, "a report is applied once")
}

// TestPullJoinsConversations: a transcript the run and this side both added to is joined line by line, every turn
// once in time order, no conflict copy; the next push gives the Volume the same bytes. When this side's lines all
// come first, the Volume's are appended in place (an agent holding the file open loses nothing).
func TestPullJoinsConversations(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vol := VolumeName("s1")
	line := func(uuid, at string) string {
		return fmt.Sprintf(`{"type":"user","uuid":%q,"timestamp":%q}`, uuid, at) + "\n"
	}
	base := line("u1", "2026-12-03T10:00:00Z")
	f.write(t, transcript, []byte(base))
	_, err := f.sync.Push(ctx)
	require.NoError(t, err)

	f.fake.Write(vol, transcript, []byte(base+line("run", "2026-12-03T10:05:00Z")))
	f.write(t, transcript, []byte(base+line("here", "2026-12-03T10:02:00Z")))
	rep, err := f.sync.Pull(ctx, "run1")
	require.NoError(t, err)
	want := base + line("here", "2026-12-03T10:02:00Z") + line("run", "2026-12-03T10:05:00Z")
	assert.Equal(t, want, f.read(t, transcript))
	assert.Equal(t, 1, rep.Joined)
	assert.Zero(t, rep.Conflicts)
	assert.NoFileExists(t, filepath.Join(f.dir, transcript+".sessionfs-conflict-run1"))
	_, err = f.sync.Push(ctx)
	require.NoError(t, err)
	got, _ := f.fake.Read(vol, transcript)
	assert.Equal(t, want, string(got), "the Volume holds the join too")

	// This side's turn came first: the run's is appended to the same file.
	before, err := os.Stat(filepath.Join(f.dir, transcript))
	require.NoError(t, err)
	f.write(t, transcript, []byte(want+line("here2", "2026-12-03T11:00:00Z")))
	f.fake.Write(vol, transcript, []byte(want+line("run2", "2026-12-03T11:30:00Z")))
	pushed, err := f.sync.Push(ctx) // a push brings in the Volume's changes first, as a pull does
	require.NoError(t, err)
	assert.Equal(t, 1, pushed.Merged.Joined)
	want += line("here2", "2026-12-03T11:00:00Z") + line("run2", "2026-12-03T11:30:00Z")
	assert.Equal(t, want, f.read(t, transcript))
	after, err := os.Stat(filepath.Join(f.dir, transcript))
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "appended in place")
	got, _ = f.fake.Read(vol, transcript)
	assert.Equal(t, want, string(got))

	// A file that is not a conversation keeps today's rule: both kept.
	f.write(t, "workspace/notes.jsonl", []byte("a\n"))
	_, err = f.sync.Push(ctx)
	require.NoError(t, err)
	f.fake.Write(vol, "workspace/notes.jsonl", []byte("a\nb\n"))
	f.write(t, "workspace/notes.jsonl", []byte("a\nc\n"))
	rep, err = f.sync.Pull(ctx, "run3")
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Conflicts)
	assert.Zero(t, rep.Joined)
}

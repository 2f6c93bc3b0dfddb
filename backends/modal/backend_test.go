package modal

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"

	"github.com/sessionfs/sessionfs/backends"
)

func (f *fixture) backend(t *testing.T, opts Options) *Backend {
	t.Helper()
	if opts.Image == "" {
		opts.Image = "debian:bookworm-slim"
	}
	b, err := NewBackend(f.sync.client, f.store, opts)
	require.NoError(t, err)
	b.RunLabel = "run1"
	return b
}

func TestRunInSandbox(t *testing.T) {
	f := setup(t)
	f.write(t, transcript, []byte("line1\n"))
	require.NoError(t, os.MkdirAll(filepath.Join(f.dir, "workspace", "empty"), 0o755))
	require.NoError(t, os.Symlink("made.txt", filepath.Join(f.dir, "workspace", "link")))
	var out, errb bytes.Buffer
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{
		SessionID: "s1", SessionDir: f.dir, Stdout: &out, Stderr: &errb,
		Argv: []string{"sh", "-c", `echo line2 >> "$CLAUDE_CONFIG_DIR/projects/-session-workspace/u1.jsonl"
			echo made > /session/workspace/made.txt
			test -d /session/workspace/empty && test -L /session/workspace/link && echo recreated
			pwd; echo oops >&2; exit 3`},
	})
	require.NoError(t, err, errb.String())
	assert.Equal(t, 3, code, "the command's exit code")
	assert.Contains(t, out.String(), "recreated", "empty folders and symlinks are made again in the sandbox")
	assert.Contains(t, out.String(), "workspace\n", "it runs in /session/workspace")
	assert.Equal(t, "oops\n", errb.String())
	assert.Equal(t, "line1\nline2\n", f.read(t, transcript), "the run's append is pulled back")
	assert.Equal(t, "made\n", f.read(t, "workspace/made.txt"))
}

func TestRunTimeoutAndCancel(t *testing.T) {
	f := setup(t)
	code, err := f.backend(t, Options{Timeout: time.Second}).Run(context.Background(), backends.Spec{
		SessionID: "s1", SessionDir: f.dir, Argv: []string{"sleep", "30"}})
	require.NoError(t, err)
	assert.Equal(t, 124, code, "a sandbox that outlives --timeout ends as a timeout")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	code, err = f.backend(t, Options{}).Run(ctx, backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", "echo before > /session/workspace/partial.txt; sleep 30"}})
	require.NoError(t, err)
	assert.Equal(t, 137, code, "Ctrl-C terminates the sandbox")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, "before\n", f.read(t, "workspace/partial.txt"), "what it wrote is still brought back")
}

func TestOneRunPerSession(t *testing.T) {
	f := setup(t)
	b := f.backend(t, Options{})
	unlock, err := b.lock("s1")
	require.NoError(t, err)
	defer unlock()
	_, err = b.Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir, Argv: []string{"true"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already going")
}

// Modal commits a sandbox's Volume writes when it tears the sandbox down, which may be after Wait answers (the
// fake commits 2 s after): the run commits them itself (sync on the mountpoint) before it exits, so the pull that
// follows Wait has them all.
func TestRunCommitsBeforeItExits(t *testing.T) {
	f := setup(t)
	f.fake.SetCommits(2*time.Second, 0)
	f.write(t, transcript, []byte("line1\n"))
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", `echo line2 >> "$CLAUDE_CONFIG_DIR/projects/-session-workspace/u1.jsonl"; echo made > late.txt`}})
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Zero(t, f.fake.Committed(), "the sandbox's own end-of-run commit has not happened yet")
	assert.Equal(t, "line1\nline2\n", f.read(t, transcript))
	assert.Equal(t, "made\n", f.read(t, "workspace/late.txt"))
}

// A node_modules/.bin of 1,500 symlinks is made again in the sandbox: the script that makes them is a file on the
// Volume (as one argument it would be about 165 KB, over Linux's 128 KiB limit: exit 127 and no message).
func TestRunWithManySymlinks(t *testing.T) {
	f := setup(t)
	bin := filepath.Join(f.dir, "workspace", "node_modules", ".bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	for i := range 1500 {
		name := fmt.Sprintf("some-rather-long-package-command-name-%04d", i)
		require.NoError(t, os.Symlink("../some-rather-long-package-name-"+fmt.Sprint(i)+"/bin/cli-entry-point.js", filepath.Join(bin, name)))
	}
	var out, errb bytes.Buffer
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Stdout: &out, Stderr: &errb,
		Argv: []string{"sh", "-c", `ls node_modules/.bin | wc -l; readlink node_modules/.bin/some-rather-long-package-command-name-1499`}})
	require.NoError(t, err)
	require.Equal(t, 0, code, errb.String())
	assert.Equal(t, "1500\n../some-rather-long-package-name-1499/bin/cli-entry-point.js\n", out.String())
}

// With no --timeout a sandbox lives as long as Modal allows (the SDK alone would send 5 minutes and kill an
// agent's run with 124); a timeout Modal would refuse is refused here, in one line.
func TestRunDefaultTimeout(t *testing.T) {
	f := setup(t)
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir, Argv: []string{"true"}})
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, 24*time.Hour, f.fake.LastTimeout())
	for _, bad := range []time.Duration{25 * time.Hour, 1500 * time.Millisecond, -time.Second} {
		_, err := NewBackend(f.sync.client, f.store, Options{Image: "x", Timeout: bad})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "whole seconds, from 1s to 24h")
	}
}

// Symlinks and empty folders the run makes come back (the Volume's listing has no link targets: the run's script
// reports them); a symlink removed here is removed from the Volume too, so the next run does not see it.
// TestRunSymlinkOfTheStartTick: a link the run makes in the clock tick it started in (here dated back before
// the run, which a same-tick mtime is to any "newer than the start" test) still comes back, and a link pushed
// with the session is not made again here once removed here while the run ran.
func TestRunSymlinkOfTheStartTick(t *testing.T) {
	f := setup(t)
	ws := filepath.Join(f.dir, "workspace")
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws, "pushed-link")))
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", `ln -s ../old-tick same-tick && touch -h -d '2000-01-01 00:00:00' same-tick &&
			rm "$(echo "$HOST_LINK" | base64 -d)"`}, Stderr: os.Stderr,
		// The host's path, encoded so that the fake's /session mapping leaves it alone: the run removes the link
		// here while it runs, as a person would.
		Env: []string{"HOST_LINK=" + base64.StdEncoding.EncodeToString([]byte(filepath.Join(ws, "pushed-link")))}})
	require.NoError(t, err)
	require.Equal(t, 0, code)
	target, err := os.Readlink(filepath.Join(ws, "same-tick"))
	require.NoError(t, err, "the link of the run's first tick came back")
	assert.Equal(t, "../old-tick", target)
	assert.NoFileExists(t, filepath.Join(ws, "pushed-link"), "a pushed link removed here is not made again by the pull")
	_, err = os.Lstat(filepath.Join(ws, "pushed-link"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestRunSymlinksBothWays(t *testing.T) {
	f := setup(t)
	vol := VolumeName("s1")
	require.NoError(t, os.Symlink("a.txt", filepath.Join(f.dir, "workspace", "old-link")))
	code, err := f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", `ln -s ../elsewhere new-link && mkdir -p made/empty && test -L old-link`}})
	require.NoError(t, err)
	require.Equal(t, 0, code)
	target, err := os.Readlink(filepath.Join(f.dir, "workspace", "new-link"))
	require.NoError(t, err, "the run's symlink came back")
	assert.Equal(t, "../elsewhere", target)
	assert.DirExists(t, filepath.Join(f.dir, "workspace", "made", "empty"))
	kind, _ := f.fake.Entry(vol, "workspace/old-link")
	require.Equal(t, pb.FileEntry_SYMLINK, kind, "the run's script made it on the Volume")

	require.NoError(t, os.Remove(filepath.Join(f.dir, "workspace", "old-link")))
	_, err = f.sync.Push(context.Background())
	require.NoError(t, err)
	kind, _ = f.fake.Entry(vol, "workspace/old-link")
	assert.Equal(t, pb.FileEntry_UNSPECIFIED, kind, "the deletion reached the Volume")
	code, err = f.backend(t, Options{}).Run(context.Background(), backends.Spec{SessionID: "s1", SessionDir: f.dir,
		Argv: []string{"sh", "-c", `! test -e old-link && ! test -L old-link`}})
	require.NoError(t, err)
	assert.Equal(t, 0, code, "the next run does not see it")
}

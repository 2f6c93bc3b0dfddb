package e2e

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestForkResumesInBoth: after a real claude turn, fork the session; the conversation resumes in both, and the
// two transcripts grow apart. find names both sessions, by-claude-id/ keeps pointing at the origin, show marks
// the fork.
func TestForkResumesInBoth(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		m := mount(t, store)
		out, err := claudeRun(t, c.path, api.URL, filepath.Join(m.session("s1"), ".claude"),
			filepath.Join(m.session("s1"), "workspace"), "-p", "hello")
		require.NoError(t, err, out)
		canonical := func(id string) string {
			return filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
		}
		files := transcripts(t, canonical("s1"))
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])

		forked := ok(t, store, "fork", "s1", "s2")
		assert.Contains(t, forked, "forked s1 into s2")
		t.Log(strings.TrimSpace(forked))
		forkFile := filepath.Join(canonical("s2"), uuid+".jsonl")
		require.Equal(t, n, lineCount(t, forkFile), "the fork starts where the origin is")

		for _, id := range []string{"s1", "s2"} {
			out, err := claudeRun(t, c.path, api.URL, filepath.Join(m.session(id), ".claude"), t.TempDir(),
				"-p", "--resume", uuid, "carry on in "+id)
			require.NoError(t, err, "resume in %s: %s", id, out)
			assert.NotContains(t, out, "No conversation found")
			assert.Contains(t, out, apistub.Reply)
			require.Len(t, transcripts(t, canonical(id)), 1, "%s: one transcript", id)
		}
		origin, err := os.ReadFile(files[0])
		require.NoError(t, err)
		fork, err := os.ReadFile(forkFile)
		require.NoError(t, err)
		assert.Greater(t, lineCount(t, files[0]), n)
		assert.Greater(t, lineCount(t, forkFile), n)
		assert.Contains(t, string(origin), "carry on in s1")
		assert.NotContains(t, string(origin), "carry on in s2", "the two grow apart")
		assert.Contains(t, string(fork), "carry on in s2")
		assert.NotContains(t, string(fork), "carry on in s1")

		r := cli(t, store, "find", uuid)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "s1\n", r.stdout, "the origin keeps the conversation")
		assert.Contains(t, r.stderr, "also in session(s) s2")
		link, err := os.Readlink(filepath.Join(m.mnt, "by-claude-id", uuid))
		require.NoError(t, err)
		assert.Equal(t, "../sessions/s1", link)
		assert.Contains(t, ok(t, store, "show", "s2"), "Forked from s1")
		assert.Contains(t, ok(t, store, "show", "s2", "--json"), `"forked_from": "s1"`)
	})
}

// TestForkClonesWhereTheFilesystemCan: on a filesystem with reflinks (XFS, on a loop device), a fork shares its
// files' blocks with the origin (the disk barely fills) until one side writes, and says it cloned.
func TestForkClonesWhereTheFilesystemCan(t *testing.T) {
	need(t, os.Geteuid() == 0, "root, to mount an XFS image on a loop device")
	mkfs, err := exec.LookPath("mkfs.xfs")
	need(t, err == nil, "mkfs.xfs (apt-get install xfsprogs)")
	img := filepath.Join(t.TempDir(), "xfs.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 512<<20))
	out, err := exec.Command(mkfs, "-q", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	mnt := t.TempDir()
	out, err = exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput()
	need(t, err == nil, "a loop device to mount an XFS image: "+strings.TrimSpace(string(out)))
	t.Cleanup(func() {
		if exec.Command("umount", mnt).Run() != nil {
			_ = exec.Command("umount", "-l", mnt).Run()
		}
	})

	store := filepath.Join(mnt, "store")
	ok(t, store, "new", "s1")
	data := make([]byte, 64<<20)
	_, _ = rand.Read(data)
	big := filepath.Join(store, "sessions", "s1", "workspace", "big.bin")
	require.NoError(t, os.WriteFile(big, data, 0o644))
	free := func() int64 {
		syscall.Sync()
		var st syscall.Statfs_t
		require.NoError(t, syscall.Statfs(mnt, &st))
		return int64(st.Bfree) * st.Bsize
	}
	before := free()
	forked := ok(t, store, "fork", "s1", "s2")
	assert.Contains(t, forked, "files cloned (reflinks)")
	used := before - free()
	assert.Less(t, used, int64(16<<20), "the fork shares the origin's blocks: %d bytes used for 64 MiB", used)
	clone := filepath.Join(store, "sessions", "s2", "workspace", "big.bin")
	got, err := os.ReadFile(clone)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got), "the clone holds the same bytes")

	f, err := os.OpenFile(clone, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("fork's own"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	orig, err := os.ReadFile(big)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, orig), "writing the fork leaves the origin as it was")
}

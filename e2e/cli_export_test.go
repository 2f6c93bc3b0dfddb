package e2e

import (
	"archive/tar"
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

// TestExportImportResumesElsewhere is issue 15's proof: a session with a real claude conversation (and a
// subagent's sidecar folder) is exported, imported into a second store at another path, mounted there, and the
// real CLI resumes the conversation from a new cwd: one transcript, grown. The original is left as it was.
func TestExportImportResumesElsewhere(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		m := mount(t, store)
		out, err := claudeRun(t, c.path, api.URL, filepath.Join(m.session("s1"), ".claude"),
			filepath.Join(m.session("s1"), "workspace"), "-p", "please "+apistub.AgentTrigger)
		require.NoError(t, err, out)
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		before, err := os.ReadFile(files[0])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "notes.txt"), []byte("kept\n"), 0o640))

		archive := filepath.Join(t.TempDir(), "s1.tar.zst")
		ok(t, store, "export", "s1", "-o", archive)
		st, err := os.Stat(archive)
		require.NoError(t, err)
		t.Logf("archive: %d bytes", st.Size())

		// Another machine: another store at another path, with nothing of the first.
		store2 := filepath.Join(t.TempDir(), "elsewhere", "store")
		outImport := ok(t, store2, "import", "--archive", archive)
		assert.Contains(t, outImport, "imported s1")
		canonical2 := filepath.Join(store2, "sessions", "s1", ".claude", "projects", "-session-workspace")
		moved := transcripts(t, canonical2)
		require.Len(t, moved, 1)
		got, err := os.ReadFile(moved[0])
		require.NoError(t, err)
		assert.Equal(t, before, got, "the transcript travels whole")
		agents, err := filepath.Glob(filepath.Join(canonical2, uuid, "subagents", "agent-*.jsonl"))
		require.NoError(t, err)
		assert.Len(t, agents, 1, "the conversation's sidecar folder travels with it")
		notes, err := os.Stat(filepath.Join(store2, "sessions", "s1", "workspace", "notes.txt"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), notes.Mode().Perm())

		m2 := mount(t, store2)
		n := lineCount(t, moved[0])
		cwd := t.TempDir()
		out, err = claudeRun(t, c.path, api.URL, filepath.Join(m2.session("s1"), ".claude"), cwd, "-p", "--resume", uuid, "on the new machine")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		assert.Contains(t, out, apistub.Reply)
		require.Len(t, transcripts(t, canonical2), 1, "one transcript")
		assert.Greater(t, lineCount(t, moved[0]), n, "grown")
		grown, err := os.ReadFile(moved[0])
		require.NoError(t, err)
		assert.Contains(t, string(grown), `"cwd":"`+cwd+`"`)
		still, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Equal(t, before, still, "the original session is untouched")
	})
}

// TestImportRefusesHostileArchive: every kind of hostile archive is refused by the CLI with one clear line and
// exit 125, and leaves nothing in the store (no session, no staging folder) nor outside it.
func TestImportRefusesHostileArchive(t *testing.T) {
	victim := t.TempDir()
	reg := func(name string, size int64) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}
	}
	var many []tar.Header
	for i := range 60 {
		many = append(many, reg("s1/workspace/f"+strings.Repeat("x", i), 0))
	}
	cases := []struct {
		name  string
		data  []byte
		flags []string
		why   string
	}{
		{"absolute name", hostile(t, reg(victim+"/planted", 1)), nil, "has an absolute name"},
		{"dot-dot", hostile(t, reg("s1/../../planted", 1)), nil, "climbs out of the session"},
		{"symlink out", hostile(t, tar.Header{Name: "s1/workspace/l", Typeflag: tar.TypeSymlink, Linkname: victim}), nil, "outside the session"},
		{"write through a symlink", hostile(t, tar.Header{Name: "s1/workspace/l", Typeflag: tar.TypeSymlink, Linkname: "."},
			reg("s1/workspace/l/planted", 1)), nil, "lies beneath a symlink"},
		{"hard link out", hostile(t, tar.Header{Name: "s1/workspace/h", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}), nil, "is a hard link"},
		{"device", hostile(t, tar.Header{Name: "s1/workspace/mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1}), nil, "is a device file"},
		{"fifo", hostile(t, tar.Header{Name: "s1/workspace/p", Typeflag: tar.TypeFifo}), nil, "is a FIFO"},
		{"size bomb", hostile(t, reg("s1/workspace/zeros", 64<<20)), []string{"--max-bytes", "16MiB"}, "larger than 16 MiB"},
		{"entry bomb", hostile(t, many...), []string{"--max-files", "50"}, "more than 50 entries"},
		{"cut short", hostile(t, reg("s1/workspace/zeros", 64<<20))[:300], nil, "archive refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := t.TempDir()
			archive := filepath.Join(t.TempDir(), "a.tar.zst")
			require.NoError(t, os.WriteFile(archive, c.data, 0o644))
			r := cli(t, store, append([]string{"import", "--archive", archive}, c.flags...)...)
			assert.Equal(t, 125, r.code, r.stderr)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			assert.Contains(t, r.stderr, "archive refused")
			assert.Contains(t, r.stderr, c.why)
			assert.Contains(t, r.stderr, "nothing was imported")
			ents, err := os.ReadDir(filepath.Join(store, "sessions"))
			require.NoError(t, err)
			assert.Empty(t, ents, "nothing left behind in the store")
			left, err := os.ReadDir(victim)
			require.NoError(t, err)
			assert.Empty(t, left, "nothing written outside")
		})
	}
}

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

// TestExportPipesIntoImport: export -o - | import --archive - (the ssh pipe of the README), with the credentials
// named on stderr and left out.
func TestExportPipesIntoImport(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	root := filepath.Join(store, "sessions", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(root, "workspace", "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".claude", ".credentials.json"), []byte(`{"t":"secret"}`), 0o600))
	exp := cli(t, store, "export", "s1", "-o", "-")
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.Contains(t, exp.stderr, "left out the credential .claude/.credentials.json (--with-credentials packs it)")
	assert.Contains(t, exp.stderr, "exported s1")

	store2 := t.TempDir()
	imp := cliStdin(t, store2, strings.NewReader(exp.stdout), "import", "--archive", "-", "--as", "piped")
	require.Equal(t, 0, imp.code, imp.stderr)
	b, err := os.ReadFile(filepath.Join(store2, "sessions", "piped", "workspace", "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(b))
	assert.NoFileExists(t, filepath.Join(store2, "sessions", "piped", ".claude", ".credentials.json"))
	assert.Contains(t, ok(t, store2, "show", "piped", "--json"), `"id": "piped"`)
}

package e2e

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
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

// TestExportToRedirectedStdout: "sessionfs export s1 > FILE" (stdout not a terminal, no -o) writes the archive to
// FILE, not to ./s1.tar.zst, and the summary goes to stderr (issue 40, defect 1).
func TestExportToRedirectedStdout(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "main.go"), []byte("package main\n"), 0o644))
	dir := t.TempDir()
	exp := cliIn(t, store, dir, nil, "export", "s1")
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.NoFileExists(t, filepath.Join(dir, "s1.tar.zst"), "the archive goes where stdout goes")
	assert.True(t, strings.HasPrefix(exp.stdout, "\x28\xb5\x2f\xfd"), "stdout is a zstd archive, not %q", truncated(exp.stdout))
	assert.Contains(t, exp.stderr, "exported s1", "the summary is on stderr")

	store2 := t.TempDir()
	imp := cliStdin(t, store2, strings.NewReader(exp.stdout), "import", "--archive", "-")
	require.Equal(t, 0, imp.code, imp.stderr)
	b, err := os.ReadFile(filepath.Join(store2, "sessions", "s1", "workspace", "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(b))
}

// truncated is s cut to 80 bytes for a message.
func truncated(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

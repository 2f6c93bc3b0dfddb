package travel

import (
	"archive/tar"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

func newStore(t *testing.T) *layout.Store {
	t.Helper()
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// promptly fails the test if fn blocks (on a FIFO, say) instead of returning.
func promptly(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked")
	}
}

var when = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// fill gives session id of s a bit of everything a session holds, with what an export must leave out.
func fill(t *testing.T, s *layout.Store, id string) string {
	t.Helper()
	_, err := s.Create(id, layout.CreateOptions{Labels: map[string]string{"team": "a"}})
	require.NoError(t, err)
	root := s.Dir(id)
	w := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), mode))
		require.NoError(t, os.Chmod(p, mode))
		require.NoError(t, os.Chtimes(p, when, when))
	}
	w("workspace/main.go", "package main\n", 0o644)
	w("workspace/run.sh", "#!/bin/sh\n", 0o755)
	w("workspace/deep/a/b/c.txt", "c", 0o600)
	w("app/bundle.js", strings.Repeat("x", 100_000), 0o644)
	// A transcript whose writer is mid-line: packed up to its last whole line.
	w(".claude/projects/-session-workspace/u1.jsonl", "{\"a\":1}\n{\"b\":2}\n{\"c\":", 0o600)
	w(".claude/projects/-session-workspace/u1/subagents/agent-1.jsonl", "{\"s\":1}\n", 0o600)
	w(".claude/.credentials.json", `{"token":"secret"}`, 0o600)
	w("workspace/.ssh/id_ed25519", "KEY", 0o600)
	require.NoError(t, os.Link(filepath.Join(root, "workspace/main.go"), filepath.Join(root, "workspace/main-link.go")))
	require.NoError(t, os.Symlink("main.go", filepath.Join(root, "workspace/rel-link")))
	require.NoError(t, os.Symlink("/session/workspace/main.go", filepath.Join(root, "workspace/abs-link")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "workspace/escape")))
	require.NoError(t, os.Symlink("../../../x", filepath.Join(root, "workspace/climb")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "workspace/fifo"), 0o644))
	if err := unix.Setxattr(filepath.Join(root, "workspace/main.go"), "user.origin", []byte("here"), 0); err != nil {
		t.Logf("no user xattrs here: %v", err)
	}
	require.NoError(t, os.Chmod(filepath.Join(root, "workspace/deep/a"), 0o750))
	require.NoError(t, os.Chtimes(filepath.Join(root, "workspace/deep/a"), when, when))
	return root
}

func export(t *testing.T, s *layout.Store, id string, opts ExportOptions) ([]byte, *ExportReport) {
	t.Helper()
	var buf bytes.Buffer
	var rep *ExportReport
	promptly(t, func() {
		var err error
		rep, err = Export(context.Background(), s, id, &buf, opts)
		require.NoError(t, err)
	})
	return buf.Bytes(), rep
}

func TestExportImportRoundTrip(t *testing.T) {
	src := newStore(t)
	fill(t, src, "s1")
	var calls int
	archive, rep := export(t, src, "s1", ExportOptions{Progress: func(done, total Counts) {
		calls++
		assert.LessOrEqual(t, done.Files, total.Files)
	}})
	assert.Positive(t, calls)
	assert.ElementsMatch(t, []string{".claude/.credentials.json", "workspace/.ssh/id_ed25519"}, rep.Credentials)
	skipped := strings.Join(rep.Skipped, "\n")
	assert.Contains(t, skipped, "workspace/fifo: a FIFO")
	assert.Contains(t, skipped, "workspace/escape: a symlink to /etc/passwd, outside the session")
	assert.Contains(t, skipped, "workspace/climb")

	dst := newStore(t)
	id, done, err := Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{As: "moved"})
	require.NoError(t, err)
	assert.Equal(t, "moved", id)
	assert.Equal(t, rep.Files, done.Files)
	root := dst.Dir("moved")

	m, err := dst.Get("moved")
	require.NoError(t, err)
	assert.Equal(t, "moved", m.ID)
	assert.Equal(t, "a", m.Labels["team"])
	b, err := os.ReadFile(filepath.Join(root, "session.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"id": "moved"`)

	got := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err, rel)
		return string(b)
	}
	assert.Equal(t, "package main\n", got("workspace/main.go"))
	assert.Equal(t, strings.Repeat("x", 100_000), got("app/bundle.js"))
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n", got(".claude/projects/-session-workspace/u1.jsonl"), "cut at the last whole line")
	assert.Equal(t, "{\"s\":1}\n", got(".claude/projects/-session-workspace/u1/subagents/agent-1.jsonl"))
	for _, rel := range []string{".claude/.credentials.json", "workspace/.ssh/id_ed25519", "workspace/fifo", "workspace/escape", "workspace/climb"} {
		_, err := os.Lstat(filepath.Join(root, rel))
		assert.ErrorIs(t, err, os.ErrNotExist, rel)
	}

	st, err := os.Stat(filepath.Join(root, "workspace/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	assert.True(t, st.ModTime().Equal(when), "mtime kept to the nanosecond: %v", st.ModTime())
	st, err = os.Stat(filepath.Join(root, "workspace/deep/a"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
	assert.True(t, st.ModTime().Equal(when), "a folder's mtime is kept")

	var a, l syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(root, "workspace/main.go"), &a))
	require.NoError(t, syscall.Stat(filepath.Join(root, "workspace/main-link.go"), &l))
	assert.Equal(t, a.Ino, l.Ino, "a hard link stays one file")
	for link, target := range map[string]string{"workspace/rel-link": "main.go", "workspace/abs-link": "/session/workspace/main.go"} {
		got, err := os.Readlink(filepath.Join(root, link))
		require.NoError(t, err)
		assert.Equal(t, target, got)
	}
	if v := make([]byte, 16); true {
		if n, err := unix.Getxattr(filepath.Join(src.Dir("s1"), "workspace/main.go"), "user.origin", v); err == nil {
			n2, err := unix.Getxattr(filepath.Join(root, "workspace/main.go"), "user.origin", v)
			require.NoError(t, err, "user xattrs travel")
			assert.Equal(t, n, n2)
			assert.Equal(t, "here", string(v[:n2]))
		}
	}
	assertClean(t, dst)

	// Importing again under the same id is refused, and leaves the first import as it was.
	_, _, err = Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{As: "moved"})
	assert.ErrorIs(t, err, layout.ErrExists)
	// Without --as, the archive's own id.
	id, _, err = Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, "s1", id)
	assertClean(t, dst)
}

func TestExportWithCredentials(t *testing.T) {
	src := newStore(t)
	fill(t, src, "s1")
	archive, rep := export(t, src, "s1", ExportOptions{WithCredentials: true})
	assert.Len(t, rep.Credentials, 2, "listed even when packed")
	dst := newStore(t)
	_, _, err := Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dst.Dir("s1"), ".claude/.credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"token":"secret"}`, string(b))
}

// assertClean checks an import left no staging folder in the store's sessions folder.
func assertClean(t *testing.T, s *layout.Store) {
	t.Helper()
	ents, err := os.ReadDir(s.SessionsDir())
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "left behind: %s", e.Name())
	}
}

func TestIsCredential(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/.credentials.json":                   true,
		"home/.claude/.credentials.json":              true,
		".codex/auth.json":                            true,
		"home/.ssh/id_rsa":                            true,
		"home/.ssh/id_rsa.pub":                        false,
		".netrc":                                      true,
		"workspace/.git-credentials":                  true,
		"workspace/auth.json":                         false,
		".claude/settings.json":                       false,
		"workspace/credentials":                       false,
		".opencode/data/opencode/auth.json":           true,
		".opencode/data/opencode/mcp-auth.json":       true,
		"workspace/opencode/auth.json":                false,
		".opencode/config/opencode/auth.json":         false,
		".kimi-code/credentials/kimi-code.json":       true,
		".kimi-code/credentials/kimi-code-env-1.json": true,
		"workspace/credentials/kimi-code.json":        false,
		".kimi-code/config.toml":                      false,
		".copilot/config.json":                        true,
		".copilot/mcp-oauth-config/tokens.json":       true,
		".copilot/settings.json":                      false,
		"home/.copilot/config.json":                   true,
		".copilot/mcp-config.json":                    false,
	} {
		assert.Equal(t, want, IsCredential(rel), rel)
	}
}

func TestLinkInside(t *testing.T) {
	for _, c := range []struct {
		rel, target string
		in          bool
	}{
		{"workspace/a", "b", true},
		{"workspace/a", "../app/x", true},
		{"workspace/a", "../..", false},
		{"workspace/a", "../../x", false},
		{"a", "..", false},
		{"workspace/a", "/session/app", true},
		{"workspace/a", "/session", true},
		{"workspace/a", "/session/../etc", false},
		{"workspace/a", "/sessionx", false},
		{"workspace/a", "/etc/passwd", false},
		{"workspace/a", "", false},
	} {
		assert.Equal(t, c.in, LinkInside(c.rel, c.target), "%s -> %s", c.rel, c.target)
	}
}

func TestWholeLines(t *testing.T) {
	for data, want := range map[string]int64{"": 0, "abc": 0, "a\n": 2, "a\nb": 2, "a\nb\n": 4,
		strings.Repeat("x", 200_000) + "\n" + strings.Repeat("y", 100_000): 200_001} {
		p := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
		f, err := os.Open(p)
		require.NoError(t, err)
		n, err := wholeLines(f, int64(len(data)))
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, want, n)
	}
}

// noise is n bytes zstd cannot shrink.
func noise(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return string(b)
}

// entry is one member of a hand-made archive.
type entry struct {
	hdr  tar.Header
	body string
}

func dir(name string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}
func file(name, body string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, body: body}
}
func link(name, target string, typ byte) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: typ, Linkname: target, Mode: 0o777}}
}

// pack makes a zstd-compressed tar of entries, as a hostile party would.
func pack(t *testing.T, entries ...entry) []byte {
	t.Helper()
	return packAs(t, 0, entries...)
}

// packAs is pack with the type of the last entry changed to typ afterwards (when typ is not 0), giving a
// header the tar writer would refuse to write: a folder with content, say.
func packAs(t *testing.T, typ byte, entries ...entry) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	var last int
	for _, e := range entries {
		require.NoError(t, tw.Flush()) // the padding of the entry before
		last = raw.Len()
		require.NoError(t, tw.WriteHeader(&e.hdr))
		_, err := io.WriteString(tw, e.body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	b := raw.Bytes()
	if typ != 0 {
		h := b[last : last+512]
		h[156] = typ
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	}
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// session is the start of a well-formed archive.
func session(more ...entry) []entry {
	return append([]entry{dir("s1/"), file("s1/session.json", `{"id":"s1"}`)}, more...)
}

func TestImportRefusesHostileArchives(t *testing.T) {
	zeros := func(n int) entry { // a size bomb: a small archive of many zeros
		return entry{hdr: tar.Header{Name: "s1/workspace/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(n)}, body: string(make([]byte, n))}
	}
	many := session()
	for i := range 120 {
		many = append(many, file("s1/workspace/f"+string(rune('a'+i%26))+strings.Repeat("x", i/26), ""))
	}
	outside := t.TempDir()
	cases := map[string]struct {
		archive []byte
		opts    ImportOptions
		why     string
	}{
		"absolute name":           {pack(t, session(file("/etc/evil", "x"))...), ImportOptions{}, "has an absolute name"},
		"dot-dot":                 {pack(t, session(file("s1/../../evil", "x"))...), ImportOptions{}, `climbs out of the session ("..")`},
		"dot-dot at the end":      {pack(t, session(dir("s1/workspace/.."))...), ImportOptions{}, "climbs out"},
		"another folder":          {pack(t, session(file("s2/evil", "x"))...), ImportOptions{}, "is outside the session's folder s1/"},
		"absolute symlink":        {pack(t, session(link("s1/workspace/l", "/etc", tar.TypeSymlink))...), ImportOptions{}, `is a symlink to "/etc", outside the session`},
		"climbing symlink":        {pack(t, session(link("s1/workspace/l", "../../..", tar.TypeSymlink))...), ImportOptions{}, "outside the session"},
		"file through a symlink":  {pack(t, session(link("s1/workspace/l", ".", tar.TypeSymlink), file("s1/workspace/l/x", "x"))...), ImportOptions{}, "lies beneath a symlink"},
		"symlink to the outside":  {pack(t, session(link("s1/workspace/l", "/session/../"+outside, tar.TypeSymlink))...), ImportOptions{}, "outside the session"},
		"hard link out":           {pack(t, session(link("s1/workspace/h", "/etc/passwd", tar.TypeLink))...), ImportOptions{}, "is a hard link to"},
		"hard link to a name":     {pack(t, session(link("s1/workspace/h", "s1/nothing", tar.TypeLink))...), ImportOptions{}, "is a hard link to"},
		"char device":             {pack(t, session(entry{hdr: tar.Header{Name: "s1/workspace/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}})...), ImportOptions{}, "is a device file"},
		"block device":            {pack(t, session(entry{hdr: tar.Header{Name: "s1/workspace/sda", Typeflag: tar.TypeBlock, Devmajor: 8}})...), ImportOptions{}, "is a device file"},
		"fifo":                    {pack(t, session(entry{hdr: tar.Header{Name: "s1/workspace/p", Typeflag: tar.TypeFifo}})...), ImportOptions{}, "is a FIFO"},
		"twice":                   {pack(t, session(file("s1/workspace/a", "1"), file("s1/workspace/a", "2"))...), ImportOptions{}, "appears twice"},
		"size bomb":               {pack(t, session(zeros(8<<20))...), ImportOptions{MaxBytes: 1 << 20}, "would make the session larger than 1.0 MiB"},
		"entry bomb":              {pack(t, many...), ImportOptions{MaxFiles: 100}, "more than 100 entries"},
		"no session.json":         {pack(t, dir("s1/"), file("s1/workspace/a", "x")), ImportOptions{}, "holds no readable session.json"},
		"session.json a symlink":  {pack(t, dir("s1/"), link("s1/session.json", "workspace/x", tar.TypeSymlink)), ImportOptions{}, "holds no readable session.json"},
		"damaged session.json":    {pack(t, dir("s1/"), file("s1/session.json", "{not json")), ImportOptions{}, "is damaged"},
		"not a session":           {pack(t, file("etc/passwd", "x")), ImportOptions{}, "not a sessionfs archive"},
		"a bad id":                {pack(t, dir("../s1/")), ImportOptions{}, "not a sessionfs archive"},
		"not zstd":                {[]byte("just some text, not an archive at all"), ImportOptions{}, "the archive is damaged"},
		"cut short":               {pack(t, session(file("s1/workspace/big", noise(100_000)))...)[:2000], ImportOptions{}, "archive"},
		"a folder with a payload": {packAs(t, tar.TypeDir, session(file("s1/d", "hello"))...), ImportOptions{}, "is damaged"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			promptly(t, func() {
				_, _, err := Import(context.Background(), s, bytes.NewReader(c.archive), c.opts)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrRefused)
				assert.Contains(t, err.Error(), c.why)
				assert.NotContains(t, err.Error(), "\n", "one line")
			})
			ents, err := os.ReadDir(s.SessionsDir())
			require.NoError(t, err)
			assert.Empty(t, ents, "nothing left behind")
			out, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Empty(t, out)
			_, err = os.Lstat("/etc/evil")
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

// TestImportStripsPrivilegeBits: a setuid bit or a security xattr in an archive is not restored.
func TestImportStripsPrivilegeBits(t *testing.T) {
	suid := file("s1/workspace/su", "#!/bin/sh\n")
	suid.hdr.Mode = 0o4755
	suid.hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": "\x01\x00\x00\x02", "SCHILY.xattr.user.ok": "yes"}
	s := newStore(t)
	_, _, err := Import(context.Background(), s, bytes.NewReader(pack(t, session(suid)...)), ImportOptions{})
	require.NoError(t, err)
	p := filepath.Join(s.Dir("s1"), "workspace/su")
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky))
	_, err = unix.Getxattr(p, "security.capability", make([]byte, 64))
	assert.Error(t, err, "no security xattr restored")
	// The convention folders are made when the archive lacks them.
	for _, d := range []string{"app", "mcps", ".claude/projects/-session-workspace"} {
		assert.DirExists(t, filepath.Join(s.Dir("s1"), d))
	}
}

// Cancelled (Ctrl-C at the CLI), an import or a fork stops and leaves nothing behind.
func TestCancelLeavesNothing(t *testing.T) {
	s := newStore(t)
	fill(t, s, "s1")
	archive, _ := export(t, s, "s1", ExportOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, _, err := Import(ctx, s, bytes.NewReader(archive), ImportOptions{As: "s2", Progress: func(Counts) {
		if n++; n == 3 {
			cancel()
		}
	}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, s.Exists("s2"))
	ctx, cancel = context.WithCancel(context.Background())
	n = 0
	_, err = Fork(ctx, s, "s1", "s3", ForkOptions{Progress: func(Counts, Counts) {
		if n++; n == 3 {
			cancel()
		}
	}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, s.Exists("s3"))
	assertClean(t, s)
	ents, err := os.ReadDir(s.SessionsDir())
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

// An archive written into the session it packs is not packed into itself.
func TestExportSkipsItsOwnOutput(t *testing.T) {
	s := newStore(t)
	fill(t, s, "s1")
	f, err := os.Create(filepath.Join(s.Dir("s1"), "workspace", "self.tar.zst"))
	require.NoError(t, err)
	defer f.Close()
	_, err = Export(context.Background(), s, "s1", f, ExportOptions{Output: f})
	require.NoError(t, err)
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	dst := newStore(t)
	_, _, err = Import(context.Background(), dst, f, ImportOptions{})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(dst.Dir("s1"), "workspace", "self.tar.zst"))
	assert.FileExists(t, filepath.Join(dst.Dir("s1"), "workspace", "main.go"))
}

// Claude's state file travels without the API key it may hold; a credential's other names stay home too.
func TestExportDropsCredentialsInsideFiles(t *testing.T) {
	s := newStore(t)
	root := fill(t, s, "s1")
	state := filepath.Join(root, ".claude", ".claude.json")
	require.NoError(t, os.WriteFile(state, []byte(`{"primaryApiKey":"sk-ant-secret","projects":{"/x":{"hasTrustDialogAccepted":true}}}`), 0o600))
	require.NoError(t, os.Link(state, filepath.Join(root, "workspace", "a-state-link")))
	require.NoError(t, os.Link(filepath.Join(root, ".claude", ".credentials.json"), filepath.Join(root, "app", "creds-link")))
	archive, rep := export(t, s, "s1", ExportOptions{})
	assert.Contains(t, rep.Credentials, ".claude/.claude.json (primaryApiKey)")
	assert.Contains(t, rep.Skipped, "app/creds-link: a hard link to the credential .claude/.credentials.json")
	dst := newStore(t)
	_, _, err := Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
	require.NoError(t, err)
	for _, rel := range []string{".claude/.claude.json", "workspace/a-state-link"} {
		b, err := os.ReadFile(filepath.Join(dst.Dir("s1"), rel))
		require.NoError(t, err)
		assert.NotContains(t, string(b), "sk-ant-secret", rel)
		assert.Contains(t, string(b), "hasTrustDialogAccepted", rel)
	}
	assert.NoFileExists(t, filepath.Join(dst.Dir("s1"), "app", "creds-link"))

	archive, _ = export(t, s, "s1", ExportOptions{WithCredentials: true})
	dst = newStore(t)
	_, _, err = Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dst.Dir("s1"), ".claude/.claude.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "sk-ant-secret", "--with-credentials packs it as it is")
}

// What a killed import or fork left (a day old) is swept by the next one; a running one's folder is not.
func TestStaleStagingIsSwept(t *testing.T) {
	s := newStore(t)
	fill(t, s, "s1")
	old := filepath.Join(s.SessionsDir(), ".import-x-123")
	fresh := filepath.Join(s.SessionsDir(), ".fork-y-456")
	for _, d := range []string{old, fresh} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "workspace"), 0o755))
	}
	day := time.Now().Add(-25 * time.Hour)
	require.NoError(t, os.Chtimes(old, day, day))
	_, err := Fork(context.Background(), s, "s1", "s2", ForkOptions{})
	require.NoError(t, err)
	assert.NoDirExists(t, old)
	assert.DirExists(t, fresh)
}

func TestIsTranscript(t *testing.T) {
	for rel, want := range map[string]bool{
		".claude/projects/-session-workspace/u.jsonl":                   true,
		".claude/projects/-session-workspace/u/subagents/agent-1.jsonl": true,
		".codex/sessions/2026/03/04/rollout-x.jsonl":                    true,
		".qwen/projects/-session-workspace/chats/c.jsonl":               true,
		"workspace/data.jsonl":                                          false, // the user's own file, copied as it is
		".claude/settings.json":                                         false,
	} {
		assert.Equal(t, want, isTranscript(rel), rel)
	}
}

// TestExportScrubsOpencodeDatabase: opencode keeps its console logins in tables of the database that holds the
// session's conversations: an export packs a copy with those tables emptied (its log folded in, no freed page
// left), and leaves the log and index beside it out.
func TestExportScrubsOpencodeDatabase(t *testing.T) {
	s := newStore(t)
	root := fill(t, s, "s1")
	p := filepath.Join(root, ".opencode", "data", "opencode", "opencode.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	defer db.Close()
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`,
		`CREATE TABLE session (id text PRIMARY KEY, directory text)`, `CREATE TABLE account (id text, token text)`,
		`CREATE TABLE control_account (id text, token text)`,
		`INSERT INTO session VALUES ('ses_1', '/session/workspace')`,
		`INSERT INTO account VALUES ('a', 'oc-secret-token')`, `INSERT INTO control_account VALUES ('c', 'oc-other-secret')`} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.FileExists(t, p+"-wal", "the rows are in the log, not yet in the database (the connection stays open)")

	plain := func(archive []byte) string { // the tar inside the zstd stream
		zr, err := zstd.NewReader(bytes.NewReader(archive))
		require.NoError(t, err)
		defer zr.Close()
		b, err := io.ReadAll(zr)
		require.NoError(t, err)
		return string(b)
	}
	archive, rep := export(t, s, "s1", ExportOptions{})
	assert.NotContains(t, plain(archive), "oc-secret-token", "nowhere in the archive")
	assert.NotContains(t, plain(archive), "oc-other-secret")
	assert.Contains(t, plain(archive), "/session/workspace", "the conversations are packed")
	assert.Contains(t, rep.Credentials, ".opencode/data/opencode/opencode.db (account)")
	assert.Contains(t, rep.Credentials, ".opencode/data/opencode/opencode.db (control_account)")
	dst := newStore(t)
	_, _, err = Import(context.Background(), dst, bytes.NewReader(archive), ImportOptions{})
	require.NoError(t, err)
	got := filepath.Join(dst.Dir("s1"), ".opencode", "data", "opencode", "opencode.db")
	assert.NoFileExists(t, got+"-wal")
	in, err := sql.Open("sqlite", "file:"+got+"?mode=ro")
	require.NoError(t, err)
	defer in.Close()
	var dir string
	require.NoError(t, in.QueryRow(`SELECT directory FROM session WHERE id = 'ses_1'`).Scan(&dir))
	assert.Equal(t, "/session/workspace", dir, "the conversations travel")
	var n int
	require.NoError(t, in.QueryRow(`SELECT count(*) FROM account`).Scan(&n))
	assert.Zero(t, n)

	archive, _ = export(t, s, "s1", ExportOptions{WithCredentials: true})
	assert.Contains(t, plain(archive), "oc-secret-token", "--with-credentials packs it as it is")
}

// TestExportScrubWithTrigger: a trigger of the session's that keeps the logins when they are deleted
// (RAISE(IGNORE)) must not put them in the archive: the database is refused, left out and named.
func TestExportScrubWithTrigger(t *testing.T) {
	s := newStore(t)
	root := fill(t, s, "s1")
	p := filepath.Join(root, ".opencode", "data", "opencode", "opencode.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	for _, q := range []string{`CREATE TABLE session (id text PRIMARY KEY, directory text)`,
		`CREATE TABLE account (id text, token text)`, `INSERT INTO account VALUES ('a', 'oc-secret-token')`,
		`CREATE TRIGGER keep BEFORE DELETE ON account BEGIN SELECT RAISE(IGNORE); END`} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	archive, rep := export(t, s, "s1", ExportOptions{})
	zr, err := zstd.NewReader(bytes.NewReader(archive))
	require.NoError(t, err)
	defer zr.Close()
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(plain, []byte("oc-secret-token")), "the login packed")
	assert.NotContains(t, rep.Credentials, ".opencode/data/opencode/opencode.db (account)", "nothing was taken out")
	require.NotEmpty(t, rep.Skipped)
	assert.Contains(t, strings.Join(rep.Skipped, "\n"), `refused: trigger "keep"`)
}

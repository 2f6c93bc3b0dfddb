package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIOverTheStore walks new, ls, show, env, exec, rm and gc as a new user would, without a mount.
func TestCLIOverTheStore(t *testing.T) {
	store := t.TempDir()

	id := strings.TrimSpace(ok(t, store, "new"))
	assert.Regexp(t, `^\d{8}-\d{6}-[0-9a-f]{6}$`, id, "a generated id")
	ok(t, store, "new", "fix-login", "--label", "team=web")
	for _, d := range []string{"app", "workspace", "mcps", ".claude/projects/-session-workspace"} {
		assert.DirExists(t, filepath.Join(store, "sessions", "fix-login", d))
	}
	settings, err := os.ReadFile(filepath.Join(store, "sessions", "fix-login", ".claude", "settings.json"))
	require.NoError(t, err)
	assert.Contains(t, string(settings), `"cleanupPeriodDays": 36500`)

	out := ok(t, store, "ls")
	assert.Contains(t, out, "fix-login")
	assert.Contains(t, out, "team=web")
	assert.Contains(t, out, id)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	assert.Len(t, rows, 2)

	show := ok(t, store, "show", "fix-login")
	assert.Contains(t, show, filepath.Join(store, "sessions", "fix-login"))
	assert.Contains(t, show, "/session/workspace")
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "fix-login", "--json")), &shown))
	assert.Equal(t, "fix-login", shown["id"])

	env := ok(t, store, "env", "fix-login")
	assert.Contains(t, env, "export CLAUDE_CONFIG_DIR='"+filepath.Join(store, "sessions", "fix-login", ".claude")+"'")
	assert.Contains(t, ok(t, store, "env", "fix-login", "--container"), "export CLAUDE_CONFIG_DIR='/session/.claude'")
	// The export lines work in a real shell.
	sh := exec.Command("sh", "-c", ok(t, store, "env", "fix-login")+`echo "$CLAUDE_CONFIG_DIR"`)
	got, err := sh.Output()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", ".claude"), strings.TrimSpace(string(got)))

	// exec: cwd is the workspace, CLAUDE_CONFIG_DIR is the session's, and the exit code comes back.
	r := cli(t, store, "exec", "fix-login", "--", "sh", "-c", `pwd; echo "$CLAUDE_CONFIG_DIR"; echo hi > made.txt; exit 7`)
	assert.Equal(t, 7, r.code)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", "workspace"), lines[0])
	assert.Equal(t, filepath.Join(store, "sessions", "fix-login", ".claude"), lines[1])
	assert.FileExists(t, filepath.Join(store, "sessions", "fix-login", "workspace", "made.txt"))
	assert.Contains(t, r.stderr, "not mounted", "exec says when aliases do not apply")
	meta, err := os.ReadFile(filepath.Join(store, "sessions", "fix-login", "session.json"))
	require.NoError(t, err)
	assert.Contains(t, string(meta), `"exit_code": 7`, "the run is recorded")
	assert.Equal(t, 127, cli(t, store, "exec", "fix-login", "--", "no-such-command-xyz").code)

	// rm moves to the trash; gc --trash deletes for good.
	assert.Contains(t, ok(t, store, "rm", "fix-login"), "trash")
	assert.NotContains(t, ok(t, store, "ls"), "fix-login")
	trash := trashedSessions(t, store)
	require.Len(t, trash, 1)
	assert.FileExists(t, filepath.Join(store, "trash", trash[0].Name(), "workspace", "made.txt"))
	assert.Contains(t, ok(t, store, "gc", "--trash", "--dry-run"), "would delete")
	assert.Len(t, trashedSessions(t, store), 1, "a dry run deletes nothing")
	ok(t, store, "gc", "--trash")
	assert.Empty(t, trashedSessions(t, store))

	assert.Regexp(t, `^sessionfs v\d+\.\d+\.\d+\S*\ncommit: +\S+\nbuilt: +\S+\ngo: +go\S+ \S+/\S+\n$`, ok(t, store, "version"))
}

// TestCLIErrors checks that bad input gets one clear line and a non-zero exit, and loses nothing.
func TestCLIErrors(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "keep")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"new", "../escape"}, "invalid session id"},
		{[]string{"new", "a/b"}, "invalid session id"},
		{[]string{"new", strings.Repeat("x", 4096)}, "invalid session id"},
		{[]string{"new", "keep"}, "already exists"},
		{[]string{"show", "missing"}, `no such session`},
		{[]string{"rm", "missing"}, `no such session`},
		{[]string{"exec", "missing", "--", "true"}, `no such session`},
		{[]string{"env", "bad id"}, "invalid session id"},
		{[]string{"gc"}, "--trash"},
		{[]string{"new", "x", "--label", "novalue"}, "KEY=VALUE"},
	}
	for _, tt := range tests {
		r := cli(t, store, tt.args...)
		assert.NotEqual(t, 0, r.code, "%v", tt.args)
		assert.Contains(t, r.stderr, tt.want, "%v", tt.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line for %v: %q", tt.args, r.stderr)
		assert.NotContains(t, r.stderr, "goroutine", "no stack traces")
	}
	assert.DirExists(t, filepath.Join(store, "sessions", "keep", "workspace"), "nothing already there is lost")
	assert.NoDirExists(t, filepath.Join(filepath.Dir(store), "escape"))
}

// TestCLIReadOnlyStore: a store on a read-only filesystem gives one clear line.
func TestCLIReadOnlyStore(t *testing.T) {
	need(t, os.Geteuid() == 0, "a read-only bind mount needs root")
	store := t.TempDir()
	ok(t, store, "new", "keep")
	require.NoError(t, exec.Command("mount", "--bind", "-o", "ro", store, store).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", store).Run() })
	r := cli(t, store, "new", "more")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "read-only")
	assert.Contains(t, ok(t, store, "ls"), "keep", "listing still works")
}

// Exit codes follow docker's: 125 for sessionfs's own failures, 126 for a command that cannot be executed,
// 127 for one that is not found, and the command's own code otherwise.
func TestExitCodes(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"show", "nope"}, 125},
		{[]string{"--no-such-flag"}, 125},
		{[]string{"exec", "s1", "--", "/etc/passwd"}, 126},
		{[]string{"exec", "s1", "--", "no-such-command-xyz"}, 127},
		{[]string{"exec", "s1", "--", "sh", "-c", "exit 1"}, 1},
		{[]string{"gc", "--idle", "-5h"}, 125},
		{[]string{"exec", "-w", "/etc", "s1", "--", "pwd"}, 125},
	} {
		r := cli(t, store, c.args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
	}
	r := cli(t, store, "exec", "-w", "/session/workspace", "s1", "--", "pwd")
	assert.Equal(t, filepath.Join(store, "sessions", "s1", "workspace")+"\n", r.stdout, "a /session path is the session's")
	mount(t, store)
	assert.Equal(t, 126, cli(t, store, "exec", "s1", "--", "/etc/passwd").code, "through the namespace helper too")
	assert.Equal(t, 127, cli(t, store, "exec", "s1", "--", "no-such-command-xyz").code)
}

// A mistyped --store is an error, never a new empty store; commands that make sessions still make one.
func TestMistypedStore(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "no-such-store")
	for _, args := range [][]string{{"ls"}, {"show", "x"}, {"rm", "x"}, {"gc", "--trash"}} {
		r := cli(t, typo, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "no store at "+typo, "%v", args)
		assert.NoDirExists(t, typo, "%v made the store", args)
	}
	ok(t, typo, "new", "first")
	assert.DirExists(t, filepath.Join(typo, "sessions", "first"))
}

// Every --json output parses, prints [] (never null) for an empty list, null (never a zero time) for a time it does
// not know, and uses snake_case keys.
func TestJSONOutputs(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", "session.json"), []byte("{broken"), 0o644))
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600))
	emptyHome := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(emptyHome, "projects"), 0o755))
	for _, args := range [][]string{
		{"ls", "--json"}, {"show", "s1", "--json"}, {"trash", "ls", "s1", "--json"},
		{"find", uuid, "--json"}, {"import", "--from", emptyHome, "--dry-run", "--json"}, {"new", "s3", "--json"},
		{"doctor", "--json"}, {"trash", "ls", "--json"}, {"runs", "s1", "--json"}, {"version", "--json"},
		{"gc", "--trash", "--dry-run", "--json"}, {"rm", "s3", "--json"},
	} {
		r := cli(t, store, args...)
		var v any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "%v: %s %s", args, r.stdout, r.stderr)
		assert.NotRegexp(t, `"(labels|cwds|aliases|runs|conversations|agents|actions|also)": null`, r.stdout, "%v: an empty list is [] or {}", args)
		assert.NotContains(t, r.stdout, "0001-01-01", "%v: an unknown time is null, not zero", args)
		checkKeys(t, args, v)
	}
}

func checkKeys(t *testing.T, args []string, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			assert.Regexp(t, `^[a-z0-9_]+$`, k, "%v: key %q", args, k)
			if k != "labels" {
				checkKeys(t, args, sub)
			}
		}
	case []any:
		for _, sub := range x {
			checkKeys(t, args, sub)
		}
	}
}

// --version works as on other CLIs; a usage mistake names the command and points at its --help, on one line.
func TestVersionAndUsageErrors(t *testing.T) {
	store := t.TempDir()
	assert.Regexp(t, `^sessionfs \S+\n$`, ok(t, store, "--version"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "--bogus"}, "(see sessionfs ls --help)"},
		{[]string{"show"}, "(see sessionfs show --help)"},
		{[]string{"run", "x"}, "(see sessionfs run --help)"},
		{[]string{"frob"}, "(see sessionfs --help)"},
	} {
		r := cli(t, store, c.args...)
		assert.Equal(t, 125, r.code, "%v", c.args)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "%v: %q", c.args, r.stderr)
	}
}

// Ids people chose are taken whole, as docker never takes a prefix of a name: with web-old and web-new, after rm
// web-new, "rm web" must not trash web-old. A generated id is taken by an unambiguous start, by commands that
// change nothing, which say which session they took; rm, rename, label and trash restore take whole ids.
func TestIDPrefixes(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "web-old")
	ok(t, store, "new", "web-new")
	ok(t, store, "rm", "web-new")
	r := cli(t, store, "rm", "web")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "did you mean web-old?")
	assert.DirExists(t, filepath.Join(store, "sessions", "web-old"), "a name is never taken by its start")
	for _, args := range [][]string{{"exec", "web-o", "--", "true"}, {"show", "web"}, {"rename", "web-o", "x"}, {"label", "web-o", "a=b"}} {
		r = cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
	}

	ok(t, store, "new")
	var gen string
	for _, id := range strings.Fields(ok(t, store, "ls", "-q")) {
		if id != "web-old" {
			gen = id
		}
	}
	require.Regexp(t, `^\d{8}-\d{6}-[0-9a-f]{6}$`, gen)
	r = cli(t, store, "rm", "nosuch", gen[:4])
	assert.NotEqual(t, 0, r.code)
	assert.DirExists(t, filepath.Join(store, "sessions", gen), "rm takes whole ids")
	for _, args := range [][]string{{"rename", gen[:10], "x"}, {"label", gen[:10], "a=b"}} {
		r = cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "did you mean "+gen)
	}
	r = cli(t, store, "show", gen[:10])
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Session     "+gen+"\n")
	assert.Contains(t, r.stderr, gen[:10]+" is session "+gen, "the prefix taken is named")
	ok(t, store, "new", gen[:10])
	r = cli(t, store, "show", gen[:10])
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Session     "+gen[:10]+"\n", "a whole id wins over a prefix")
	r = cli(t, store, "show", "zz")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "no such session")
}

// Each --format's help gives an example that works on its own command (runs and show showed ls's, which failed
// on them).
func TestFormatHelpExamplesWork(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "exec", "s1", "--", "true")
	example := regexp.MustCompile(`--format string +print each item through a Go template, e\.g\. '([^']+)'`)
	for _, args := range [][]string{{"ls"}, {"show", "s1"}, {"runs", "s1"}} {
		m := example.FindStringSubmatch(ok(t, store, append([]string{args[0], "--help"}, args[1:]...)...))
		require.NotNil(t, m, "%s --help gives a --format example", args[0])
		r := cli(t, store, append(args, "--format", m[1])...)
		assert.Equal(t, 0, r.code, "%s --format %q: %s", args[0], m[1], r.stderr)
		assert.NotEmpty(t, strings.TrimSpace(r.stdout))
		assert.NotContains(t, r.stdout, "<no value>")
	}
}

// TestHostileInput: escaping symlinks are never followed by our own tools; damaged metadata is reported and the
// rest works; a full store and a store we may not write give one clear line and leave nothing half made.
func TestHostileInput(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), make([]byte, 1<<20), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(store, "sessions", "s1", "workspace", "escape")))
	require.NoError(t, os.Symlink("/", filepath.Join(store, "sessions", "s1", "workspace", "root")))

	out := ok(t, store, "ls")
	assert.NotContains(t, out, "MiB", "size accounting does not follow the links out of the session")
	ok(t, store, "rm", "s1")
	ok(t, store, "gc", "--trash")
	assert.FileExists(t, filepath.Join(outside, "precious"), "gc does not follow links out of the session")

	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", "session.json"), []byte("{not json"), 0o644))
	ok(t, store, "new", "s3")
	out = ok(t, store, "ls")
	assert.Contains(t, out, "damaged: ")
	assert.Contains(t, out, "s3")

	for _, id := range []string{"..", "../x", "a/b", "/etc", strings.Repeat("z", 4096), "é", "-rf", "a\nb"} {
		r := cli(t, store, "new", "--", id)
		assert.NotEqual(t, 0, r.code, "%q", id)
		assert.Contains(t, r.stderr, "invalid session id")
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1)
	}

	if os.Geteuid() == 0 {
		// A store we may not write: the CLI as another user.
		require.NoError(t, os.Chmod(store, 0o755))
		cmd := exec.Command(bin, "new", "theirs")
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%s", out)
		assert.Contains(t, string(out), "permission denied")
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1)

		// A full store: a small tmpfs.
		full := t.TempDir()
		require.NoError(t, exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full).Run())
		t.Cleanup(func() { _ = exec.Command("umount", "-l", full).Run() })
		ok(t, full, "new", "keep")
		require.NoError(t, os.WriteFile(filepath.Join(full, "filler"), make([]byte, 200<<10), 0o644))
		prof := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), make([]byte, 64<<10), 0o644))
		r := cli(t, full, "new", "more", "--profile", prof)
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "no space left")
		assert.NoDirExists(t, filepath.Join(full, "sessions", "more"))
		ents, _ := os.ReadDir(full)
		for _, e := range ents {
			assert.False(t, strings.HasPrefix(e.Name(), ".new-"), "no half-made session: %s", e.Name())
		}
		assert.Contains(t, ok(t, full, "ls"), "keep")
	}
}

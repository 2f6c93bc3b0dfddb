package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// Defects a new user tripped over (the everyday-use issue), each as the user met it.

// A mountpoint inside the store, a store inside the mountpoint, a store mounted twice and a mountpoint that
// holds files are refused with one line each, and nothing is mounted.
func TestMountPlacesRefused(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "j1")
	inside := filepath.Join(store, "sessions", "j1", "workspace", "loop")
	r := cli(t, store, "mount", inside)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is inside the store")
	assert.False(t, isFUSEMount(inside))

	outer := t.TempDir()
	r = cliWith(t, filepath.Join(outer, "store"), "", nil, nil, "mount", outer)
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is inside the mountpoint")

	m := mount(t, store)
	second := filepath.Join(t.TempDir(), "again")
	r = cli(t, store, "mount", second)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+m.mnt)
	assert.False(t, isFUSEMount(second))

	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "mine.txt"), []byte("keep"), 0o644))
	m.stop(t)
	r = cli(t, store, "mount", full)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is not empty")
	assert.FileExists(t, filepath.Join(full, "mine.txt"))
}

// unmount touches only sessionfs mounts.
func TestUnmountOnlyOurs(t *testing.T) {
	need(t, os.Geteuid() == 0, "mounting a tmpfs needs root")
	dir := t.TempDir()
	require.NoError(t, exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).Run())
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	r := cli(t, t.TempDir(), "unmount", dir)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "is a tmpfs mount, not a sessionfs one")
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Contains(t, string(b), " "+dir+" ", "the tmpfs is still mounted")

	// A busy sessionfs mount is detached lazily, and the user is told.
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	busy := exec.Command("sleep", "30")
	busy.Dir = filepath.Join(m.session("s1"), ".claude")
	require.NoError(t, busy.Start())
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })
	r = cli(t, store, "unmount", m.mnt)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "detached lazily")
	assert.False(t, isFUSEMount(m.mnt))
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

// resume UUID resumes that conversation, also when a session (an imported one) is named after the uuid.
func TestResumeUUIDOfImportedSession(t *testing.T) {
	store := t.TempDir()
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	ok(t, store, "new", uuid)
	canon := filepath.Join(store, "sessions", uuid, ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600))
	r := cli(t, store, "resume", "--claude", "echo", uuid)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "--resume "+uuid+"\n", lastLineOf(r.stdout))

	ok(t, store, "new", "plain")
	r = cli(t, store, "resume", "--claude", "echo", "plain")
	assert.Equal(t, "--continue\n", lastLineOf(r.stdout))
	r = cli(t, store, "resume", "--claude", "echo", "nope")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `no session or conversation is called "nope"`)
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// find, resume and by-claude-id/ see a conversation made without the mount (filed under another cwd's folder,
// not folded yet), as ls and show do.
func TestFindUnfoldedConversation(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	folder := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-home-u-proj")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(folder, uuid+".jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600))
	assert.Equal(t, "s1\n", ok(t, store, "find", uuid))
	r := cli(t, store, "resume", "--claude", "echo", uuid)
	assert.Equal(t, "--resume "+uuid+"\n", lastLineOf(r.stdout), r.stderr)
	m := mount(t, store, "--read-only") // read-only: nothing folds it first
	link, err := os.Readlink(filepath.Join(m.mnt, "by-claude-id", uuid))
	require.NoError(t, err)
	assert.Equal(t, "../sessions/s1", link)
	fi, err := os.Lstat(filepath.Join(m.mnt, "by-claude-id", uuid))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), fi.ModTime(), time.Hour, "the entry carries the conversation's time, not 1970")
}

// Several rm errors are one line each.
func TestRmErrorsOneALine(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cli(t, store, "rm", "nope1", "s1", "nope2")
	assert.Equal(t, 125, r.code)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.Len(t, lines, 2, r.stderr)
	assert.Contains(t, lines[0], "nope1")
	assert.Contains(t, lines[1], "nope2")
	assert.Contains(t, r.stdout, "s1 -> ", "the good one is removed")
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

// Completion offers what fits where the cursor is: no session ids for the command after --, backends for
// --backend, push/pull then ids for sync, trashed uuids for trash restore.
func TestCompletionInContext(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "demo")
	complete := func(args ...string) []string {
		out := ok(t, store, append([]string{"__complete"}, args...)...)
		var words []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				words = append(words, l)
			}
		}
		return words
	}
	assert.NotContains(t, complete("exec", "demo", "--", ""), "demo")
	assert.Equal(t, []string{"local", "docker", "modal"}, complete("run", "--backend", ""))
	assert.Equal(t, []string{"push", "pull"}, complete("sync", ""))
	assert.Equal(t, []string{"demo"}, complete("sync", "push", ""))
	assert.Empty(t, complete("trash", "restore", "demo", ""), "nothing in the trash: no session ids offered")
	assert.Equal(t, []string{"demo"}, complete("rm", "x", ""), "rm takes many ids")
}

// Flags a backend does not take are refused, not ignored; a local run on an unmounted store says so, as exec
// does; a profile's conversations and credentials are not copied into new sessions.
func TestRunFlagsAndProfile(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	for _, args := range [][]string{
		{"run", "--timeout", "1m", "s1", "--", "true"},
		{"run", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "docker", "--timeout", "1m", "--image", "x", "s1", "--", "true"},
		{"run", "--backend", "modal", "--strict", "--image", "x", "s1", "--", "true"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "applies to --backend", "%v", args)
	}
	r := cli(t, store, "run", "s1", "--", "true")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stderr, "not mounted")

	prof := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prof, "CLAUDE.md"), []byte("be nice"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(prof, "projects", "-home-me"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(prof, "projects", "-home-me", "a.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(prof, ".credentials.json"), []byte("{}"), 0o600))
	ok(t, store, "new", "p1", "--profile", prof)
	claudeDir := filepath.Join(store, "sessions", "p1", ".claude")
	assert.FileExists(t, filepath.Join(claudeDir, "CLAUDE.md"))
	assert.NoFileExists(t, filepath.Join(claudeDir, ".credentials.json"))
	assert.NoDirExists(t, filepath.Join(claudeDir, "projects", "-home-me"))
	r = cli(t, store, "new", "p2", "--profile", filepath.Join(prof, "missing"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, filepath.Join(prof, "missing"))
}

// rmdir of a session that holds anything is ENOTEMPTY, as for any folder; rm -rf still removes it (whole, to
// the trash: TestRmRfSessionRecoverable).
func TestRmdirOfASession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	err := syscall.Rmdir(m.session("s1"))
	assert.ErrorIs(t, err, syscall.ENOTEMPTY)
	assert.DirExists(t, filepath.Join(store, "sessions", "s1", "workspace"), "nothing was removed")
	require.NoError(t, os.RemoveAll(m.session("s1")))
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1"))
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

// show prints lists as text, not Go slices, and the session's runs.
func TestShowText(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	st, err := layout.OpenStore(store)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Update("s1", func(m *layout.Meta) error { m.AddAlias("-home-a"); m.AddAlias("-home-b"); return nil })
	require.NoError(t, err)
	ok(t, store, "exec", "s1", "--", "true")
	out := ok(t, store, "show", "s1")
	assert.Contains(t, out, "Aliases     -home-a, -home-b\n")
	assert.Regexp(t, `(?m)^Runs\s+1, the last .* on local, exit 0 \(sessionfs runs\)$`, out)
	assert.NotContains(t, out, "[")
}

// Defect 17: an alias is recorded in session.json when something is written through it (a file created, renamed
// or removed there, a transcript opened for writing after being looked up there), never when it is only looked
// at: listing, stat, reading.
func TestAliasesRecordedWhenWritten(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canonical, uuid+".jsonl"), []byte("{}\n"), 0o600))
	m := mount(t, store)
	projects := filepath.Join(m.session("s1"), ".claude", "projects")
	aliases := func() []string {
		var meta layout.Meta
		raw, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		return meta.Aliases
	}

	sh(t, projects, "ls -la -- -looked; ls -- -looked/; stat -- -looked/"+uuid+".jsonl; cat -- -read/"+uuid+".jsonl; ls -d -- -x -y")
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, aliases(), "looking records nothing")

	sh(t, projects, "echo '{}' >> -appended/"+uuid+".jsonl; touch -- -created/new.jsonl; mkdir -- -mkdir/"+uuid)
	eventually(t, 5*time.Second, func() bool { return len(aliases()) == 3 }, "three aliases written through: %v", aliases())
	assert.ElementsMatch(t, []string{"-appended", "-created", "-mkdir"}, aliases())
	assert.Equal(t, 2, lineCount(t, filepath.Join(canonical, uuid+".jsonl")))
}

// Defect 6: a session removed through the mount (rm -rf, find -delete) goes to the trash whole, workspace
// included, disappears from the mount, and trash ls / trash restore see it and bring it back as it was.
func TestRmRfSessionRecoverable(t *testing.T) {
	store := t.TempDir()
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	for _, id := range []string{"s1", "s2"} {
		ok(t, store, "new", id)
		ws := filepath.Join(store, "sessions", id, "workspace")
		require.NoError(t, os.MkdirAll(filepath.Join(ws, "src", "deep"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "deep", "main.go"), []byte("package main\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine"), 0o644))
		canon := filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
		require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600))
	}
	m := mount(t, store)
	assert.Empty(t, sh(t, m.mnt, "rm -rf sessions/s1"), "rm -rf says nothing")
	// find -delete takes session.json first too; it then reports the names that vanished with it.
	find := exec.Command("find", "sessions/s2", "-delete")
	find.Dir = m.mnt
	found, _ := find.CombinedOutput()
	assert.NotContains(t, string(found), "session.json", "session.json went first")
	for _, id := range []string{"s1", "s2"} {
		assert.NoDirExists(t, m.session(id), "the mount shows it gone")
		assert.NoDirExists(t, filepath.Join(store, "sessions", id))
	}
	assert.NotContains(t, sh(t, m.mnt, "ls sessions"), "s1")
	require.Len(t, trashedSessions(t, store), 2, "each session is in the trash, whole")

	out := ok(t, store, "trash", "ls")
	assert.Regexp(t, `(?m)^s1\s+.*s1\.\d{8}T`, out)
	assert.Regexp(t, `(?m)^s2\s+`, out)
	assert.Regexp(t, `(?m)^s1\s+`, ok(t, store, "trash", "ls", "s1"), "trash ls of a removed session lists it")
	var listed []layout.TrashedSession
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "trash", "ls", "--json")), &listed))
	require.Len(t, listed, 2)

	assert.Contains(t, ok(t, store, "trash", "restore", "s1"), "restored "+filepath.Join(store, "sessions", "s1"))
	for _, root := range []string{filepath.Join(store, "sessions", "s1"), m.session("s1")} {
		b, err := os.ReadFile(filepath.Join(root, "workspace", "src", "deep", "main.go"))
		require.NoError(t, err, "the workspace is back: %s", root)
		assert.Equal(t, "package main\n", string(b))
		assert.FileExists(t, filepath.Join(root, "workspace", "notes.txt"))
		assert.FileExists(t, filepath.Join(root, ".claude", "projects", "-session-workspace", uuid+".jsonl"))
	}
	assert.Contains(t, ok(t, store, "show", "s1"), uuid)
	require.Len(t, trashedSessions(t, store), 1)

	ok(t, store, "new", "s2")
	r := cli(t, store, "trash", "restore", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already exists", "a session of that id again is never overwritten")
	r = cli(t, store, "trash", "restore", "nope")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "nothing of that id in the trash")
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

// A store whose mount's daemon died is reported as stale, with the way out, not as "not mounted".
func TestStaleMountReported(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	m.kill(t)
	require.True(t, staleMount(m.mnt))
	r := cli(t, store, "exec", "s1", "--", "true")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the store's mount at "+m.mnt+" is stale (its daemon is gone; sessionfs mount serves it again)")
	assert.NotContains(t, r.stderr, "not mounted")
}

// A read-only mount stays read-only for runs: exec's (and run's) binds of the store's folders were writable, so
// a run wrote to the store through them.
func TestReadOnlyMountReadOnlyRuns(t *testing.T) {
	need(t, os.Geteuid() == 0, "the root path of exec's binds; TestMountAsNormalUser covers users")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store, "--read-only")
	r := cli(t, store, "exec", "s1", "--", "sh", "-c", "echo x > written.txt")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "Read-only file system")
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "written.txt"))
}

// The same for run --backend docker, whose binds of the store's folders were writable too.
func TestReadOnlyMountReadOnlyContainers(t *testing.T) {
	images(t, needDocker(t), "")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mount(t, store, "--read-only")
	r := inContainer(t, store, "s1", "echo x > /session/workspace/in-container.txt")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "Read-only file system")
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "in-container.txt"))
}

// gc --dry-run lists every deletion the real run makes, with sizes and a total: it left out the idle session the
// real run trashes and then deletes with the trash.
func TestGCDryRunListsEveryDeletion(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "idle")
	ok(t, store, "new", "gone")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "idle", "workspace", "f"), make([]byte, 100_000), 0o644))
	ok(t, store, "rm", "gone")
	time.Sleep(1100 * time.Millisecond)
	stamp := regexp.MustCompile(`\.\d{8}T\d{6}\.\d+Z`)
	dry := strings.Split(strings.TrimSpace(ok(t, store, "gc", "--idle", "1s", "--trash", "--dry-run")), "\n")
	real := strings.Split(strings.TrimSpace(ok(t, store, "gc", "--idle", "1s", "--trash")), "\n")
	require.Len(t, dry, len(real), "dry run:\n%s\nreal run:\n%s", strings.Join(dry, "\n"), strings.Join(real, "\n"))
	deletes := 0
	for i := range real {
		want := strings.Replace(stamp.ReplaceAllString(real[i], ".T"), "freed", "free", 1)
		assert.Equal(t, want, strings.TrimPrefix(stamp.ReplaceAllString(dry[i], ".T"), "would "))
		if strings.HasPrefix(real[i], "delete ") {
			deletes++
		}
	}
	assert.Equal(t, 2, deletes, "the idle session and the removed one")
	assert.Regexp(t, `^would free \d+(\.\d+)? KiB$`, dry[len(dry)-1])
	assert.Regexp(t, `\(\d+(\.\d+)? KiB\)$`, dry[0])
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

// Labels follow Kubernetes' rule: commas, newlines, spaces in keys and 5,000-character values (which broke ls)
// are refused with the rule said, on new and label alike.
func TestLabelsValidated(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1", "--label", "example.com/team=web")
	for _, kv := range []string{"a,b=x", "k=two\nlines", "has space=x", "k=" + strings.Repeat("v", 5000), "k=a,b"} {
		r := cli(t, store, "label", "s1", kv)
		assert.Equal(t, 125, r.code, "%q", kv)
		assert.Contains(t, r.stderr, "a key is up to 63 characters", "%q", kv)
		r = cli(t, store, "new", "s2", "--label", kv)
		assert.Equal(t, 125, r.code, "%q", kv)
		assert.NoDirExists(t, filepath.Join(store, "sessions", "s2"))
	}
	ok(t, store, "label", "s1", "stage=review", "empty=")
	assert.Contains(t, ok(t, store, "ls"), "empty=,example.com/team=web,stage=review")
}

// ls --json and show --json have the same keys, every one always present: labels, runs, mounted and created came
// and went (a damaged session had no created), and ls said dir where show said store.root.
func TestJSONKeysAlwaysPresent(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "plain")
	require.NoError(t, os.MkdirAll(filepath.Join(store, "sessions", "damaged", "workspace"), 0o755))
	keys := []string{"id", "created", "labels", "cwds", "aliases", "forked_from", "runs", "store", "mounted", "size",
		"last_activity", "damaged"}
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
	require.Len(t, rows, 2)
	for _, row := range rows {
		for _, k := range append(keys, "conversations", "agents") {
			assert.Contains(t, row, k, "ls --json of %v", row["id"])
		}
		assert.NotContains(t, row, "dir")
		assert.Equal(t, filepath.Join(store, "sessions", row["id"].(string)), row["store"].(map[string]any)["root"])
	}
	assert.Nil(t, rows[0]["created"], "a damaged session's creation is unknown: null")
	assert.Equal(t, map[string]any{}, rows[1]["labels"])
	assert.Equal(t, []any{}, rows[1]["runs"])
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "show", "plain", "--json")), &shown))
	for _, k := range append(keys, "container", "conversations") {
		assert.Contains(t, shown, k, "show --json")
	}
}

// resume without the agent's CLI says how to install it (exit 127, as a shell says not found) and records no run;
// it printed Go's "executable file not found in $PATH" and recorded one.
func TestResumeWithoutTheCLI(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	r := cliIn(t, store, "", []string{"PATH=/nonexistent"}, "resume", "s1")
	assert.Equal(t, 127, r.code, r.stderr)
	assert.Contains(t, r.stderr, "npm install -g @anthropic-ai/claude-code")
	assert.NotContains(t, r.stderr, "executable file not found")
	assert.Equal(t, "[]\n", ok(t, store, "runs", "s1", "--json"), "no run recorded")
}

// The 8-character conversation ids watch prints are taken by find, resume and trash restore when unambiguous
// (they were refused); an ambiguous start names the candidates.
func TestConversationIDPrefixes(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid, twin = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01", "7a1c0d2e-0000-4b12-b46b-12e68f6e9f02"
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	for _, u := range []string{uuid, twin, "7a1c0d2e-1111-4b12-b46b-12e68f6e9f03"} {
		require.NoError(t, os.WriteFile(filepath.Join(canon, u+".jsonl"), []byte(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), 0o600))
	}
	r := cli(t, store, "find", uuid[:8])
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "s1\n", r.stdout)
	assert.Contains(t, r.stderr, uuid[:8]+" is conversation "+uuid)
	r = cli(t, store, "resume", "--claude", "echo", uuid[:8])
	assert.Equal(t, "--resume "+uuid+"\n", lastLineOf(r.stdout), r.stderr)
	r = cli(t, store, "find", twin[:8])
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, `"7a1c0d2e" is the start of 2 conversations`)

	m := mount(t, store)
	require.NoError(t, os.Remove(filepath.Join(m.session("s1"), ".claude", "projects", "-session-workspace", uuid+".jsonl")))
	r = cli(t, store, "trash", "restore", "s1", uuid[:8])
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(canon, uuid+".jsonl"))
}

// A conversation can be read, not only followed: watch --from-start prints what the transcripts hold, and with
// --no-follow exits after.
func TestWatchReadsAConversation(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	line := `{"type":"user","timestamp":"2026-11-24T10:00:00Z","sessionId":"2fe2d21b-be8f-4b12-b46b-12e68f6e9f01","message":{"role":"user","content":"hello there"}}`
	require.NoError(t, os.WriteFile(filepath.Join(canon, "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), []byte(line+"\n"), 0o600))
	out := ok(t, store, "watch", "s1", "--no-follow")
	assert.Regexp(t, `^2fe2d21b \d\d:\d\d:\d\d user +hello there\n$`, out)
}

// ls --sort orders by creation, activity (newest first) or size (largest first); a bad order is a usage error.
func TestLsSort(t *testing.T) {
	store := t.TempDir()
	for _, id := range []string{"b", "a", "c"} {
		ok(t, store, "new", id)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "a", "workspace", "big"), make([]byte, 1<<20), 0o644))
	assert.Equal(t, "a\nb\nc\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "c\na\nb\n", ok(t, store, "ls", "-q", "--sort", "created"))
	assert.Equal(t, "a\nc\nb\n", ok(t, store, "ls", "-q", "--sort", "active"), "a's file is the newest activity")
	assert.Equal(t, "a", strings.Fields(ok(t, store, "ls", "-q", "--sort", "size"))[0])
	r := cli(t, store, "ls", "--sort", "name")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "want id, created, active or size")
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// The attacks of the containment issue, each run as the attacker would: from inside a real container that has
// its session at /session. A host folder only root may read stands for everything outside the session.

// Finding 1: a folder renamed away under a cwd in another alias view and replaced by a symlink to a host folder
// (or to another session) never leads the daemon there; nor does a .claude replaced under a cwd.
func TestAttackAliasViewSwap(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s2", "workspace", "theirs"), []byte(hostMarker+"\n"), 0o600))
	secret := hostSecret(t)
	mount(t, store)

	for i, target := range []string{secret, "../../../../s2/workspace"} {
		script := fmt.Sprintf(`P=/session/.claude/projects
mkdir -p $P/-X/evil%[1]d && cd $P/-Y/evil%[1]d && mv $P/-X/evil%[1]d $P/-X/evil%[1]d.old && ln -s %[2]s $P/-X/evil%[1]d || exit 99
cat secret theirs; ls; echo owned > planted; echo done`, i, target)
		r := inContainer(t, store, "s1", script)
		assert.NotEqual(t, 99, r.code, "the setup ran: %s", r.stderr)
		assert.Contains(t, r.stdout, "done")
		assert.NotContains(t, r.stdout+r.stderr, hostMarker, "%s: nothing outside the session is read", target)
	}
	// Without aliases: .claude moved away under a cwd in its canonical folder, and the path re-made as a link.
	r := inContainer(t, store, "s1", fmt.Sprintf(`C=/session/.claude/projects/-session-workspace
cd $C && mv /session/.claude /session/.claude-old && mkdir -p /session/.claude/projects && ln -s %s $C || exit 99
cat secret; echo owned > planted; echo done`, secret))
	assert.NotEqual(t, 99, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, hostMarker)
	assertSecretUntouched(t, secret)
	assert.NoFileExists(t, filepath.Join(store, "sessions", "s2", "workspace", "planted"), "nothing written into another session")
}

// Finding 2: session.json's "id" is data. A session claiming another id is still itself: the next run binds
// its own folder, ls lists every session once, and gc --idle trashes the idle one, not the one it names.
func TestAttackSessionJSONID(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "victim")
	elsewhere := t.TempDir()
	rel, err := filepath.Rel(filepath.Join(store, "sessions"), elsewhere)
	require.NoError(t, err)

	r := inContainer(t, store, "s1", fmt.Sprintf(`printf '{"id":"%s","created":"2020-01-01T00:00:00Z"}' > /session/session.json`, rel))
	require.Equal(t, 0, r.code, r.stderr)
	r = inContainer(t, store, "s1", `touch /session/workspace/second-run && ls /session`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", "workspace", "second-run"), "the run bound its own folder")
	ents, _ := os.ReadDir(elsewhere)
	assert.Empty(t, ents, "nothing seeded or bound at the path the session named")

	r = inContainer(t, store, "s1", `printf '{"id":"victim","created":"2020-01-01T00:00:00Z"}' > /session/session.json`)
	require.Equal(t, 0, r.code, r.stderr)
	var infos []layout.Info
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &infos))
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ID)
	}
	assert.ElementsMatch(t, []string{"s1", "victim"}, ids, "every session once, under its folder's name")

	// s1 goes idle; victim is live.
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, filepath.Walk(filepath.Join(store, "sessions", "s1"), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}))
	ok(t, store, "gc", "--idle", "24h")
	assert.DirExists(t, filepath.Join(store, "sessions", "victim"), "the live session is kept")
	assert.NoDirExists(t, filepath.Join(store, "sessions", "s1"), "the idle one is trashed")
}

// withTimeout runs a command and fails the test if it does not finish in time (a hang of the daemon).
func withTimeout(t *testing.T, d time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "%s %v hung", name, args)
	return string(out), err
}

// Finding 3: a FIFO, or a link to /dev/zero, as session.json hangs nothing: the mount lists, sessionfs ls
// answers and calls the sessions damaged.
func TestAttackSessionJSONFIFO(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	ok(t, store, "new", "s2")
	require.Equal(t, 0, inContainer(t, store, "s1", `rm /session/session.json && mkfifo /session/session.json`).code)
	require.Equal(t, 0, inContainer(t, store, "s2", `rm /session/session.json && ln -s /dev/zero /session/session.json`).code)
	m := mount(t, store)

	for _, id := range []string{"s1", "s2"} {
		out, err := withTimeout(t, 20*time.Second, "ls", "-la", filepath.Join(m.session(id), ".claude", "projects")+"/")
		assert.NoError(t, err, out)
		out, err = withTimeout(t, 20*time.Second, "ls", filepath.Join(m.session(id), ".claude", "projects", "-new-cwd")+"/")
		assert.NoError(t, err, out)
	}
	t.Setenv("SESSIONFS_STORE", store)
	out, err := withTimeout(t, 20*time.Second, bin, "ls")
	require.NoError(t, err, out)
	assert.Equal(t, 2, strings.Count(out, "damaged: "), out)
	_, err = os.Lstat(filepath.Join(store, "sessions", "s1", "session.json"))
	require.NoError(t, err)
}

// Finding 4: folding history made while unmounted never follows a canonical folder the session made a link.
func TestAttackFoldThroughLink(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	secret := hostSecret(t)
	r := inContainer(t, store, "s1", fmt.Sprintf(`P=/session/.claude/projects
rm -rf $P/-session-workspace && ln -s %s $P/-session-workspace && mkdir $P/-bogus && echo x > $P/-bogus/planted.jsonl`, secret))
	require.Equal(t, 0, r.code, r.stderr)
	m := mount(t, store)
	_, _ = withTimeout(t, 20*time.Second, "ls", "-la", filepath.Join(m.session("s1"), ".claude", "projects")+"/")
	_, _ = withTimeout(t, 20*time.Second, "ls", filepath.Join(m.session("s1"), ".claude", "projects", "-bogus")+"/")
	assertSecretUntouched(t, secret)
	assert.FileExists(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", "-bogus", "planted.jsonl"), "nothing moved")
}

// Finding 5: run --home never writes through a home/ the session made a link; run --strict never binds a host
// folder in place of app/ or mcps/, mounted or not.
func TestAttackHomeAndBindLinks(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	secret := hostSecret(t)
	r := inContainer(t, store, "s1", fmt.Sprintf(`rm -rf /session/home /session/mcps && ln -s %[1]s /session/home && ln -s %[1]s /session/mcps`, secret))
	require.Equal(t, 0, r.code, r.stderr)

	check := func(mounted string) {
		r := inContainer(t, store, "s1", `echo ran`, "--home")
		assert.NotEqual(t, 0, r.code, "%s: --home refuses a home/ that is a link", mounted)
		r = inContainer(t, store, "s1", `cat /session/mcps/secret; ls /session/mcps; echo ran`, "--strict")
		assert.NotContains(t, r.stdout+r.stderr, hostMarker, "%s: the host folder is not bound", mounted)
		if r.code != 0 {
			assert.Contains(t, r.stderr, "not a folder of the session", mounted)
		}
		assertSecretUntouched(t, secret)
	}
	check("unmounted")
	mount(t, store)
	check("mounted")
}

// Finding 6: a uuid copied into another session (whose id sorts first) does not take the conversation.
func TestAttackConversationHijack(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "victim")
	ok(t, store, "new", "a-thief")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canon := filepath.Join(store, "sessions", "victim", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canon, uuid+".jsonl"), []byte(`{"type":"user","sessionId":"`+uuid+`"}`+"\n"), 0o600))
	time.Sleep(10 * time.Millisecond)
	r := inContainer(t, store, "a-thief", fmt.Sprintf(`echo '{"type":"user"}' > /session/.claude/projects/-session-workspace/%s.jsonl`, uuid))
	require.Equal(t, 0, r.code, r.stderr)

	res := cli(t, store, "find", uuid)
	assert.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "victim\n", res.stdout)
	assert.Contains(t, res.stderr, "also in session(s) a-thief")
	m := mount(t, store)
	link, err := os.Readlink(filepath.Join(m.mnt, "by-claude-id", uuid))
	require.NoError(t, err)
	assert.Equal(t, "../sessions/victim", link)
	ents, err := os.ReadDir(filepath.Join(m.mnt, "by-claude-id"))
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

// show and ls read a session's transcripts as hostile input: a FIFO named like a transcript blocks nothing, and
// a transcript folder the session made a link to a host folder is not read.
func TestAttackShowTranscripts(t *testing.T) {
	dockerContainment(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"),
		[]byte(`{"type":"user","message":{"role":"user","content":"`+hostMarker+`"}}`+"\n"), 0o600))
	r := inContainer(t, store, "s1", fmt.Sprintf(`P=/session/.claude/projects
mkfifo $P/-session-workspace/0fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl && ln -s %s $P/-linked`, host))
	require.Equal(t, 0, r.code, r.stderr)
	t.Setenv("SESSIONFS_STORE", store)
	out, err := withTimeout(t, 20*time.Second, bin, "show", "s1")
	require.NoError(t, err, out)
	assert.NotContains(t, out, hostMarker)
	out, err = withTimeout(t, 20*time.Second, bin, "ls")
	require.NoError(t, err, out)
}

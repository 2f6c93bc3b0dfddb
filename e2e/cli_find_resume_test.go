package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestFindResumeAndByClaudeID: by-claude-id/<uuid> leads to the session; find prints it; resume runs claude
// there, by conversation or by session.
func TestFindResumeAndByClaudeID(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		api := stub(t, "127.0.0.1:0")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		ok(t, store, "new", "s2")
		m := mount(t, store)
		out, err := claudeRun(t, claude, api.URL, filepath.Join(m.session("s2"), ".claude"), filepath.Join(m.session("s2"), "workspace"), "-p", "hi")
		require.NoError(t, err, out)
		canon := filepath.Join(store, "sessions", "s2", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canon)
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

		link := filepath.Join(m.mnt, "by-claude-id", uuid)
		eventually(t, 2*time.Second, func() bool {
			target, err := os.Readlink(link)
			return err == nil && target == "../sessions/s2"
		}, "by-claude-id/%s does not lead to the session", uuid)
		ents, err := os.ReadDir(filepath.Join(m.mnt, "by-claude-id"))
		require.NoError(t, err)
		require.Len(t, ents, 1)
		assert.Equal(t, uuid, ents[0].Name())
		assert.DirExists(t, filepath.Join(link, "workspace"), "the link resolves through the mount")

		assert.Equal(t, "s2\n", ok(t, store, "find", uuid))
		var rows []struct {
			ID            string `json:"id"`
			Conversations int    `json:"conversations"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, store, "ls", "--json")), &rows))
		require.Len(t, rows, 2)
		assert.Equal(t, []int{0, 1}, []int{rows[0].Conversations, rows[1].Conversations}, "ls counts each session's conversations")
		r := cli(t, store, "find", "0000-not-there")
		assert.NotEqual(t, 0, r.code)
		assert.Contains(t, r.stderr, "no session holds that conversation")

		env := append(claudeEnv(t, api.URL), "SESSIONFS_STORE="+store)
		n := lineCount(t, files[0])
		cmd := exec.Command(bin, "resume", uuid, "--claude", claude, "--", "-p", "by uuid")
		cmd.Dir, cmd.Env = t.TempDir(), env
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		assert.Contains(t, string(b), apistub.Reply)
		assert.Greater(t, lineCount(t, files[0]), n)
		n = lineCount(t, files[0])
		cmd = exec.Command(bin, "resume", "s2", "--claude", claude, "--", "-p", "by session")
		cmd.Env = env
		b, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		assert.Greater(t, lineCount(t, files[0]), n, "--continue picked the same conversation")
		require.Len(t, transcripts(t, canon), 1)
	})
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

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}

// When claude exits inside exec, sessionfs prints the command that resumes its conversation from any shell
// (claude's own "claude --resume UUID" needs the session's environment), on stderr; a run of anything else
// prints none. The command works from another folder.
func TestExecClaudePrintsSessionfsResume(t *testing.T) {
	claude := claudeBin(t)
	store, api := claudeSetup(t)
	env := claudeEnv(t, api.URL)
	r := cliIn(t, store, "", env, "exec", "s1", "--", claude, "-p", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, apistub.Reply)
	var files []string
	for _, dir := range glob(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", "*")) {
		files = append(files, transcripts(t, dir)...)
	}
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	assert.Contains(t, r.stderr, "sessionfs resume "+uuid+"\n")
	assert.NotContains(t, r.stdout, "sessionfs resume", "on stderr only")

	n := lineCount(t, files[0])
	r = cliIn(t, store, t.TempDir(), env, "resume", uuid, "--claude", claude, "--", "-p", "again")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Greater(t, lineCount(t, files[0]), n, "the printed command resumes the conversation")
	assert.Contains(t, r.stderr, "sessionfs resume "+uuid+"\n", "a resumed conversation is the one printed")

	r = cliIn(t, store, "", env, "exec", "s1", "--", "sh", "-c", "true")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "sessionfs resume", "not a claude run")
}

// resume UUID --backend docker resumes a conversation begun on the host in a container (--image alone means
// docker); it had no --backend.
func TestResumeInDocker(t *testing.T) {
	claude := claudeBin(t)
	cli := needDocker(t)
	real, err := filepath.EvalSymlinks(claude)
	require.NoError(t, err)
	images(t, cli, real)
	store, api := claudeSetup(t)
	m := mount(t, store)
	out, err := claudeRun(t, claude, api.URL, filepath.Join(m.session("s1"), ".claude"), filepath.Join(m.session("s1"), "workspace"), "-p", "hi")
	require.NoError(t, err, out)
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	files := transcripts(t, canonical)
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	n := lineCount(t, files[0])
	for _, backend := range [][]string{{"--backend", "docker", "--image", claudeImage}, {"--image", claudeImage}} {
		args := append(append([]string{"resume", uuid}, backend...), "--network", "host", "-v", real+":/usr/local/bin/claude:ro",
			"-e", "ANTHROPIC_BASE_URL="+api.URL, "-e", "ANTHROPIC_API_KEY=sk-ant-test", "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"-e", "HOME=/tmp", "--claude", "/usr/local/bin/claude", "--", "-p", "now in a container")
		r := cliIn(t, store, t.TempDir(), nil, args...)
		require.Equal(t, 0, r.code, "%v: %s %s", backend, r.stdout, r.stderr)
		assert.NotContains(t, r.stdout+r.stderr, "No conversation found")
		require.Len(t, transcripts(t, canonical), 1)
		assert.Greater(t, lineCount(t, files[0]), n, "%v: the container resumed the host's conversation", backend)
		assert.Contains(t, r.stderr, "sessionfs resume "+uuid+"\n", "%v: the run's conversation, for any shell", backend)
		n = lineCount(t, files[0])
	}
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"cwd":"/session/workspace"`, "it ran in the container")
}

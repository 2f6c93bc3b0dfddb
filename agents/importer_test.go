package agents_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/codex/codextest"
	"github.com/sessionfs/sessionfs/agents/gemini"
	"github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// Each agent's files, as its CLI wrote them (testdata/session), land where the agent looks for them in a
// session, with their times; a second run copies nothing; the originals are untouched.
func TestImport(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	for _, tt := range []struct {
		agent *agents.Agent
		dst   string
		n     int
	}{
		{codex.Agent, ".codex/sessions/2026/11/23/rollout-2026-11-23T07-05-15-01a20739-265b-7793-acee-f94fce8f06e3.jsonl", 1},
		{gemini.Agent, ".gemini/tmp/workspace/chats/session-2026-11-23T07-02-9ab916a9.jsonl", 2},
		{qwen.Agent, ".qwen/projects/-session-workspace/chats/6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl", 1},
	} {
		from := filepath.Join("testdata", "session", tt.agent.Dir)
		opts := agents.ImportOptions{Agent: tt.agent, From: from, Into: "imported", DryRun: true}
		rep, err := agents.Import(store, opts)
		require.NoError(t, err)
		assert.Len(t, rep.Imported, tt.n, tt.agent.Name)
		assert.False(t, store.Exists("imported") && tt.agent == codex.Agent, "a dry run makes nothing")

		opts.DryRun = false
		rep, err = agents.Import(store, opts)
		require.NoError(t, err)
		require.Len(t, rep.Imported, tt.n, tt.agent.Name)
		got := filepath.Join(store.Dir("imported"), tt.dst)
		st, err := os.Stat(got)
		require.NoError(t, err, tt.agent.Name)
		orig, err := filepath.Glob(filepath.Join(from, "*", "*", "*", "*", filepath.Base(tt.dst)))
		require.NoError(t, err)
		if len(orig) == 0 {
			orig, _ = filepath.Glob(filepath.Join(from, "*", "*", "chats", filepath.Base(tt.dst)))
		}
		require.Len(t, orig, 1)
		ost, err := os.Stat(orig[0])
		require.NoError(t, err)
		assert.Equal(t, ost.ModTime(), st.ModTime(), "its time is kept")
		assert.Equal(t, ost.Size(), st.Size())

		rep, err = agents.Import(store, opts)
		require.NoError(t, err)
		assert.Empty(t, rep.Imported, "nothing new")
		assert.Len(t, rep.Unchanged, tt.n)
	}
	sess, err := store.OpenSession("imported")
	require.NoError(t, err)
	defer sess.Close()
	cs, err := all.SessionConversations(sess)
	require.NoError(t, err)
	assert.Len(t, cs, 3, "show lists them")
	m, err := store.Get("imported")
	require.NoError(t, err)
	assert.Contains(t, m.Cwds, "/tmp/qx/ws", "the cwds they ran in are known")
	b, err := os.ReadFile(filepath.Join(store.Dir("imported"), ".gemini", "tmp", "workspace", gemini.Owner))
	require.NoError(t, err)
	assert.Equal(t, agents.CanonicalCwd, string(b), "Gemini's folder is claimed as Prepare claims it")

	// One session per conversation without --into, named by its id; a conversation already held is updated there.
	rep, err := agents.Import(store, agents.ImportOptions{Agent: qwen.Agent, From: filepath.Join("testdata", "session", ".qwen")})
	require.NoError(t, err)
	assert.Empty(t, rep.Sessions, "already held by session imported")
	assert.Equal(t, []string{"6ff0322b-05c7-4854-be6e-8e9ae644122e"}, rep.Unchanged)
	rep, err = agents.Import(store, agents.ImportOptions{Agent: codex.Agent, From: filepath.Join("testdata", "session", ".codex"), Into: ""})
	require.NoError(t, err)
	assert.Empty(t, rep.Sessions)
}

func TestImportProject(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	for agent, project := range map[*agents.Agent]string{codex.Agent: "/tmp/cx", qwen.Agent: "/tmp/qx/ws"} {
		rep, err := agents.Import(store, agents.ImportOptions{Agent: agent, From: filepath.Join("testdata", "session", agent.Dir), Project: project, DryRun: true})
		require.NoError(t, err)
		assert.Len(t, rep.Imported, 1, agent.Name)
		rep, err = agents.Import(store, agents.ImportOptions{Agent: agent, From: filepath.Join("testdata", "session", agent.Dir), Project: "/elsewhere", DryRun: true})
		require.NoError(t, err)
		assert.Empty(t, rep.Imported, agent.Name)
	}
	// Gemini's chats hold no cwd: the project's folder is the one projects.json names.
	from := t.TempDir()
	require.NoError(t, os.CopyFS(from, os.DirFS(filepath.Join("testdata", "session", ".gemini"))))
	rep, err := agents.Import(store, agents.ImportOptions{Agent: gemini.Agent, From: from, Project: "/tmp/gx/ws", DryRun: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Imported, "no projects.json: unknown")
	require.NoError(t, os.WriteFile(filepath.Join(from, "projects.json"), []byte(`{"projects":{"/tmp/gx/ws":"ws"}}`), 0o644))
	rep, err = agents.Import(store, agents.ImportOptions{Agent: gemini.Agent, From: from, Project: "/tmp/gx/ws", DryRun: true})
	require.NoError(t, err)
	assert.Len(t, rep.Imported, 2)
}

// A link in the folder imported from is never followed: nothing outside it is copied into a session.
func TestImportNoLinks(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	from := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte(`{"type":"user","message":{"parts":[{"text":"secret"}]}}`+"\n"), 0o600))
	chats := filepath.Join(from, "projects", "-x", "chats")
	require.NoError(t, os.MkdirAll(chats, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(chats, "6ff0322b-05c7-4854-be6e-8e9ae644122e.jsonl")))
	require.NoError(t, os.Symlink(outside, filepath.Join(from, "projects", "-y")))
	rep, err := agents.Import(store, agents.ImportOptions{Agent: qwen.Agent, From: from, Into: "s"})
	require.NoError(t, err)
	assert.Empty(t, rep.Imported)
	assert.False(t, store.Exists("s"))
}

// Codex's threads in every shape are imported as they are: a reverted thread's rollouts together (one
// conversation), an archived one in archived_sessions, a compressed one compressed.
func TestImportCodexShapes(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	from := t.TempDir()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	reverted, archived, cold := codextest.Thread(1), codextest.Thread(2), codextest.Thread(3)
	rels := []string{
		codextest.Dated(day, codextest.Name(day, reverted, "")),
		codextest.Dated(day, codextest.Name(day, reverted, codextest.Thread(9))),
		"archived_sessions/" + codextest.Name(day, archived, ""),
		"archived_sessions/" + codextest.Name(day, cold, "") + ".zst",
	}
	codextest.Write(t, from, rels[0], codextest.Rollout(reverted, "/ws", day, false, "first"))
	codextest.Write(t, from, rels[1], codextest.Rollout(reverted, "/ws/later", day, true, "after the revert"))
	codextest.Write(t, from, rels[2], codextest.Rollout(archived, "/ws", day, false, "archived"))
	codextest.Write(t, from, rels[3], codextest.Compress(t, codextest.Rollout(cold, "/ws", day, false, "cold")))

	opts := agents.ImportOptions{Agent: codex.Agent, From: from + "/", Into: "s"} // as typed, a slash after it
	rep, err := agents.Import(store, opts)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{reverted, archived, cold}, rep.Imported, "a thread once")
	for _, rel := range rels {
		want, err := os.ReadFile(filepath.Join(from, rel))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(store.Dir("s"), ".codex", rel))
		require.NoError(t, err, rel)
		assert.Equal(t, want, got, rel)
	}
	m, err := store.Get("s")
	require.NoError(t, err)
	assert.Contains(t, m.Cwds, "/ws/later", "the cwds of every rollout")
	sess, err := store.OpenSession("s")
	require.NoError(t, err)
	defer sess.Close()
	cs, err := codex.Agent.Conversations(sess)
	require.NoError(t, err)
	assert.Len(t, cs, 3)

	rep, err = agents.Import(store, opts)
	require.NoError(t, err)
	assert.Empty(t, rep.Imported)
	assert.Len(t, rep.Unchanged, 3)
}

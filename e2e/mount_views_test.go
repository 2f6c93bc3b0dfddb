package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	geminiagent "github.com/sessionfs/sessionfs/agents/gemini"
	qwenagent "github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/layout"
)

// TestAgentViewsThroughMount: the other agents' cwd-keyed folders through the mount, without their CLIs: any
// name the agent could make is the canonical folder (Gemini's claim file excepted), other entries pass through,
// rm -rf takes everything, and a canonical folder the session made a link out of it is never followed.
func TestAgentViewsThroughMount(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	mnt, sess := m.session("s1"), filepath.Join(store, "sessions", "s1")

	// Gemini: mkdir of a new project name makes the canonical folder; the claim stays the name's own.
	tmp := filepath.Join(mnt, ".gemini", "tmp")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "webapp", "chats"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "webapp", geminiagent.Owner), []byte("/src/webapp"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "webapp", "chats", "c.jsonl"), []byte("{}\n"), 0o644))
	assert.FileExists(t, filepath.Join(sess, ".gemini", "tmp", "workspace", "chats", "c.jsonl"), "written through the view, kept in the canonical folder")
	b, err := os.ReadFile(filepath.Join(sess, ".gemini", "tmp", "webapp", geminiagent.Owner))
	require.NoError(t, err)
	assert.Equal(t, "/src/webapp", string(b), "the claim is the name's own")
	assert.NoFileExists(t, filepath.Join(sess, ".gemini", "tmp", "workspace", geminiagent.Owner))
	assert.FileExists(t, filepath.Join(tmp, "api", "chats", "c.jsonl"), "every project name shows it")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "bin", "rg"), nil, 0o755))
	assert.FileExists(t, filepath.Join(sess, ".gemini", "tmp", "bin", "rg"), "Gemini's shared folders are its own")
	require.NoError(t, os.RemoveAll(filepath.Join(mnt, ".gemini")))
	assert.NoDirExists(t, filepath.Join(sess, ".gemini"))

	// Qwen: every cwd's folder is the canonical one; Codex's folders are plain.
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, ".qwen", "projects", "-src-api", "chats"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, ".qwen", "projects", "-src-api", "chats", "q.jsonl"), []byte("{}\n"), 0o644))
	assert.FileExists(t, filepath.Join(sess, ".qwen", "projects", qwenagent.Folder(agents.CanonicalCwd), "chats", "q.jsonl"))
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, ".codex", "sessions", "2026"), 0o755))
	assert.DirExists(t, filepath.Join(sess, ".codex", "sessions", "2026"))

	// Attack: the canonical folder made a link out of the session is never shown through a view.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	gtmp := filepath.Join(sess, ".gemini", "tmp")
	require.NoError(t, os.MkdirAll(gtmp, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(gtmp, "workspace")))
	_, err = os.ReadFile(filepath.Join(tmp, "other", "secret"))
	assert.Error(t, err, "a view never leads through the link")
	assert.Error(t, os.WriteFile(filepath.Join(tmp, "other", "x"), nil, 0o644))
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "nothing written outside")
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

// TestConcurrentAppendsThroughAliases: 64 processes append 10,000 lines each to one transcript through 64
// different alias views; the file ends with exactly 640,000 whole lines.
func TestConcurrentAppendsThroughAliases(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	const writers, lines = 64, 10000
	var cmds []*exec.Cmd
	for w := 0; w < writers; w++ {
		p := filepath.Join(m.session("s1"), ".claude", "projects", fmt.Sprintf("-cwd-%d", w), "t.jsonl")
		cmd := appender(t, p, fmt.Sprint(w), lines, false)
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		require.NoError(t, c.Wait())
	}
	f, err := os.Open(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "t.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	count := make([]int, writers)
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Writer string
			N      int
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %d is not whole: %q", total, sc.Text())
		w, _ := strconv.Atoi(e.Writer)
		require.Equal(t, count[w], e.N, "writer %d's lines in order", w)
		count[w]++
		total++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, writers*lines, total)
}

// Finding 7: session.json updates hold across processes: runs recorded by parallel execs (taking turns at the
// session's lease with --wait) and aliases recorded by the daemon at the same time are all kept.
func TestNoLostSessionUpdates(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	const n = 16
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			cli(t, store, "exec", "--wait", "s1", "--", "true")
		}()
		go func() {
			defer wg.Done()
			view := filepath.Join(m.session("s1"), ".claude", "projects", fmt.Sprintf("-cwd-%d", i))
			_ = os.WriteFile(filepath.Join(view, fmt.Sprintf("note-%d", i)), nil, 0o600) // written through: recorded
		}()
	}
	wg.Wait()
	eventually(t, 5*time.Second, func() bool {
		var meta layout.Meta
		raw, err := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
		if err != nil || json.Unmarshal(raw, &meta) != nil {
			return false
		}
		aliases := 0
		for _, a := range meta.Aliases {
			if strings.HasPrefix(a, "-cwd-") {
				aliases++
			}
		}
		return len(meta.Runs) == n && aliases == n
	}, "every run and every alias recorded")
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestClaudeResumesFromAnyCwd is the mission: a conversation started in the session's workspace resumes from a
// subfolder and from a folder outside the mount, continuing the same file, never "No conversation found".
func TestClaudeResumesFromAnyCwd(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		m := mount(t, store)
		cfg := filepath.Join(m.session("s1"), ".claude")
		ws := filepath.Join(m.session("s1"), "workspace")
		sub := filepath.Join(ws, "pkg", "deep")
		require.NoError(t, os.MkdirAll(sub, 0o755))
		outside := t.TempDir()

		out, err := claudeRun(t, claude, api.URL, cfg, ws, "-p", "hello")
		require.NoError(t, err, out)
		assert.Contains(t, out, apistub.Reply)
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "the transcript lands in the store's canonical folder")
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])

		for _, dir := range []string{sub, outside} {
			out, err := claudeRun(t, claude, api.URL, cfg, dir, "-p", "--resume", uuid, "again from "+dir)
			require.NoError(t, err, "resume from %s: %s", dir, out)
			assert.NotContains(t, out, "No conversation found")
			assert.Contains(t, out, apistub.Reply)
			require.Len(t, transcripts(t, canonical), 1, "resume continues the same file")
			grown := lineCount(t, files[0])
			assert.Greater(t, grown, n, "the transcript grows")
			n = grown
		}
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Contains(t, string(b), `"cwd":"`+outside+`"`, "new lines carry the new cwd")

		// --continue from yet another cwd picks the newest conversation: the same file grows.
		other := t.TempDir()
		out, err = claudeRun(t, claude, api.URL, cfg, other, "-p", "--continue", "and continue")
		require.NoError(t, err, out)
		require.Len(t, transcripts(t, canonical), 1, "--continue did not start a new conversation")
		assert.Greater(t, lineCount(t, files[0]), n)

		// The aliases the session used are recorded and listed.
		eventually(t, 5e9, func() bool {
			meta, _ := os.ReadFile(filepath.Join(store, "sessions", "s1", "session.json"))
			return strings.Contains(string(meta), claudeName(outside))
		}, "the alias of %s is recorded in session.json", outside)
		ents, err := os.ReadDir(filepath.Join(cfg, "projects"))
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.Contains(t, names, "-session-workspace")
		assert.Contains(t, names, claudeName(outside))
	})
}

// claudeName is what Claude Code names the transcript folder of a plain ASCII path.
func claudeName(p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		p = real
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, p)
}

// TestWithoutMountResumeFails is the control: against the plain store, a conversation does not follow its session
// to another cwd. The old CLI says "No conversation found" to --resume; newer ones (2.1.223+) find it, since
// --resume scans every projects folder, but --continue from another cwd starts a new conversation. It proves the
// mount is what makes the other tests pass, and that the oracle is real.
func TestWithoutMountResumeFails(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		cfg := filepath.Join(store, "sessions", "s1", ".claude")
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		out, err := claudeRun(t, c.path, api.URL, cfg, ws, "-p", "hello")
		require.NoError(t, err, out)
		files := transcripts(t, filepath.Join(cfg, "projects", claudeName(ws)))
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		out, _ = claudeRun(t, c.path, api.URL, cfg, t.TempDir(), "-p", "--resume", uuid, "x")
		if c.atLeast("2.1.223") {
			assert.NotContains(t, out, "No conversation found", "new CLIs scan every projects folder")
		} else {
			assert.Contains(t, out, "No conversation found")
		}
		out, err = claudeRun(t, c.path, api.URL, cfg, t.TempDir(), "-p", "--continue", "x")
		require.NoError(t, err, out)
		all, err := filepath.Glob(filepath.Join(cfg, "projects", "*", "*.jsonl"))
		require.NoError(t, err)
		assert.Len(t, all, 2, "--continue from another cwd started a second conversation")
	})
}

// TestProjectDirNameWithoutMount: with CLAUDE_CODE_PROJECT_DIR_NAME (which sessionfs sets in every environment it
// hands out), CLIs since 2.1.234 file every cwd's transcript in the canonical folder, so --resume and --continue
// from any cwd continue one file with no mount at all. Older CLIs ignore the variable: they need the mount's views.
func TestProjectDirNameWithoutMount(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		cfg := filepath.Join(store, "sessions", "s1", ".claude")
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		env := []string{"CLAUDE_CONFIG_DIR=" + cfg, claude.EnvProjectDirName + "=" + claude.ProjectDirName}
		out, err := claudeRunEnv(t, c.path, api.URL, env, ws, "-p", "hello")
		require.NoError(t, err, out)
		if !c.atLeast("2.1.234") {
			assert.Len(t, transcripts(t, filepath.Join(cfg, "projects", claudeName(ws))), 1, "the old CLI ignores the variable")
			return
		}
		canonical := filepath.Join(cfg, "projects", claude.ProjectDirName)
		files := transcripts(t, canonical)
		require.Len(t, files, 1, "the transcript is in the canonical folder")
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		n := lineCount(t, files[0])
		for _, args := range [][]string{{"--resume", uuid, "again"}, {"--continue", "and again"}} {
			out, err := claudeRunEnv(t, c.path, api.URL, env, t.TempDir(), append([]string{"-p"}, args...)...)
			require.NoError(t, err, out)
			assert.NotContains(t, out, "No conversation found")
			all, err := filepath.Glob(filepath.Join(cfg, "projects", "*", "*.jsonl"))
			require.NoError(t, err)
			assert.Equal(t, files, all, "%v continued the one transcript", args)
			assert.Greater(t, lineCount(t, files[0]), n, "%v grew it", args)
			n = lineCount(t, files[0])
		}
	})
}

// TestSubagentVisibleThroughEveryAlias: a subagent transcript, in the conversation's sidecar folder, is the same
// file under every alias, and folders under different aliases are distinct inodes.
func TestSubagentVisibleThroughEveryAlias(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		m := mount(t, store)
		cfg := filepath.Join(m.session("s1"), ".claude")
		out, err := claudeRun(t, claude, api.URL, cfg, filepath.Join(m.session("s1"), "workspace"), "-p", "please "+apistub.AgentTrigger)
		require.NoError(t, err, out)

		agents, err := filepath.Glob(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace", "*", "subagents", "agent-*.jsonl"))
		require.NoError(t, err)
		require.Len(t, agents, 1, "claude wrote a subagent transcript into the canonical folder")
		rel, err := filepath.Rel(filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace"), agents[0])
		require.NoError(t, err)
		want, err := os.ReadFile(agents[0])
		require.NoError(t, err)

		var fileInos, dirInos []uint64
		for _, alias := range []string{"-session-workspace", "-home-u-proj", claudeName(t.TempDir()), "-x"} {
			p := filepath.Join(cfg, "projects", alias, rel)
			got, err := os.ReadFile(p)
			require.NoError(t, err, "through alias %s", alias)
			assert.Equal(t, want, got)
			var st syscall.Stat_t
			require.NoError(t, syscall.Stat(p, &st))
			fileInos = append(fileInos, st.Ino)
			require.NoError(t, syscall.Stat(filepath.Dir(p), &st))
			dirInos = append(dirInos, st.Ino)
		}
		for i := range fileInos {
			assert.Equal(t, fileInos[0], fileInos[i], "a file is one inode under every alias")
			for j := range dirInos {
				if i != j {
					assert.NotEqual(t, dirInos[i], dirInos[j], "folders under different aliases are distinct inodes")
				}
			}
		}
		_, err = os.Stat(filepath.Join(cfg, "projects", "not.a.claude.name"))
		assert.ErrorIs(t, err, os.ErrNotExist, "names outside Claude's alphabet do not exist")
	})
}

// TestUnmountedHistoryIsFoldedIn: a conversation made while the store was not mounted (Claude filed it under the
// store path's folder) resumes from any cwd once the store is mounted.
func TestUnmountedHistoryIsFoldedIn(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		claude := c.path
		ws := filepath.Join(store, "sessions", "s1", "workspace")
		out, err := claudeRun(t, claude, api.URL, filepath.Join(store, "sessions", "s1", ".claude"), ws, "-p", "before the mount")
		require.NoError(t, err, out)
		files := transcripts(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", claudeName(ws)))
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

		m := mount(t, store)
		out, err = claudeRun(t, claude, api.URL, filepath.Join(m.session("s1"), ".claude"), t.TempDir(), "-p", "--resume", uuid, "after")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		require.Len(t, transcripts(t, canonical), 1, "folded into the canonical folder and resumed there")
		assert.NoDirExists(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", claudeName(ws)))
	})
}

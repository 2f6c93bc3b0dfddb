package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	geminiagent "github.com/sessionfs/sessionfs/agents/gemini"
	qwenagent "github.com/sessionfs/sessionfs/agents/qwen"
	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/layout"
)

// TestCopiesThroughMountAreFaithful: a session whose conversations the real (old) claude CLI wrote from its
// workspace on the mount and from two other cwds (so its session.json records three aliases) is copied through the
// mount by tar, cp -a and rsync -aH; each copy is the store's session folder (names, types, modes, owners,
// contents, mtimes), grep -rl, find and du meet each transcript once, and the conversation still resumes and
// continues from yet another cwd.
func TestCopiesThroughMountAreFaithful(t *testing.T) {
	store, api := claudeSetup(t)
	claude := claudeBin(t)
	m := mount(t, store)
	mnt, sess := m.session("s1"), filepath.Join(store, "sessions", "s1")
	cfg, ws := filepath.Join(mnt, ".claude"), filepath.Join(mnt, "workspace")
	sub, outside := filepath.Join(ws, "pkg"), t.TempDir()
	require.NoError(t, os.MkdirAll(sub, 0o755))
	const needle = "copies-needle-7f3a"

	out, err := claudeRun(t, claude, api.URL, cfg, ws, "-p", "first "+needle)
	require.NoError(t, err, out)
	canonical := filepath.Join(sess, ".claude", "projects", layout.CanonicalProject)
	files := transcripts(t, canonical)
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	out, err = claudeRun(t, claude, api.URL, cfg, sub, "-p", "--resume", uuid, "again "+needle)
	require.NoError(t, err, out)
	out, err = claudeRun(t, claude, api.URL, cfg, outside, "-p", "another "+needle) // a second conversation
	require.NoError(t, err, out)
	require.Len(t, transcripts(t, canonical), 2, "both conversations in the canonical folder")
	aliases := []string{claudeName(ws), claudeName(sub), claudeName(outside)}
	var meta layout.Meta
	eventually(t, 5*time.Second, func() bool {
		raw, _ := os.ReadFile(filepath.Join(sess, "session.json"))
		return json.Unmarshal(raw, &meta) == nil && len(meta.Aliases) == len(aliases)
	}, "the three cwds' names recorded as aliases: %v", &meta.Aliases)
	for _, a := range aliases {
		assert.DirExists(t, filepath.Join(cfg, "projects", a), "a lookup of an alias still answers")
	}
	assert.Contains(t, ok(t, store, "show", "s1"), aliases[2], "show lists the aliases from session.json")

	want := treeOf(t, sess)
	tmp := t.TempDir()

	tgz := filepath.Join(tmp, "s.tgz")
	sh(t, tmp, "tar czf "+tgz+" -C "+filepath.Dir(mnt)+" s1")
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "tar"), 0o755))
	sh(t, tmp, "tar xzf "+tgz+" -C tar")
	sameTree(t, "tar", want, treeOf(t, filepath.Join(tmp, "tar", "s1")))

	sh(t, tmp, "cp -a "+mnt+" cp")
	sameTree(t, "cp -a", want, treeOf(t, filepath.Join(tmp, "cp")))

	_, err = exec.LookPath("rsync")
	need(t, err == nil, "rsync: apt-get install rsync")
	sh(t, tmp, "rsync -aH "+mnt+"/ rsync/")
	sameTree(t, "rsync -aH", want, treeOf(t, filepath.Join(tmp, "rsync")))

	storeHits, mountHits := grepL(t, sess, needle), grepL(t, mnt, needle)
	t.Logf("grep -rl %s: store %v, mount %v", needle, storeHits, mountHits)
	assert.Equal(t, storeHits, mountHits, "grep -rl lists each file once, as in the store")
	for _, f := range files {
		rel, _ := filepath.Rel(sess, f)
		assert.Contains(t, mountHits, rel)
	}

	storeFind, mountFind := sh(t, sess, "find . | sort"), sh(t, mnt, "find . | sort")
	assert.Equal(t, storeFind, mountFind, "find meets what the store holds")

	storeDu, mountDu := duKiB(t, sess), duKiB(t, mnt)
	t.Logf("du -s: store %d KiB, mount %d KiB", storeDu, mountDu)
	assert.InDelta(t, storeDu, mountDu, 4, "du through the mount is the store's, within a 4 KiB block")

	// Resume and continue from yet another cwd: its name is looked up, never listed.
	again := t.TempDir()
	out, err = claudeRun(t, claude, api.URL, cfg, again, "-p", "--resume", uuid, "from elsewhere")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "No conversation found")
	assert.Contains(t, out, apistub.Reply)
	out, err = claudeRun(t, claude, api.URL, cfg, again, "-p", "--continue", "and continue")
	require.NoError(t, err, out)
	assert.Contains(t, out, apistub.Reply)
	assert.Len(t, transcripts(t, canonical), 2, "resume and continue found the conversations, no new one")
}

// TestCopiesThroughMountOtherAgents: Gemini's and Qwen's cwd-keyed folders written through other cwds' names (as
// their CLIs do, without the CLIs) are listed as the store holds them: tar through the mount restores the store's
// session but for Gemini's claims of the other names (<name>/.project_root), which the listing leaves out with
// their names; each chat is met once.
func TestCopiesThroughMountOtherAgents(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	mnt, sess := m.session("s1"), filepath.Join(store, "sessions", "s1")
	const needle = "copies-needle-agents"

	gtmp := filepath.Join(mnt, ".gemini", "tmp")
	for _, name := range []string{geminiagent.Slug(agents.CanonicalCwd), "webapp", "api"} {
		require.NoError(t, os.MkdirAll(filepath.Join(gtmp, name, "chats"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(gtmp, name, geminiagent.Owner), []byte("/src/"+name), 0o644))
		chat := filepath.Join(gtmp, name, "chats", "session-2026-11-26T01-00-"+name+".jsonl")
		require.NoError(t, os.WriteFile(chat, []byte(`{"text":"`+needle+`"}`+"\n"), 0o600))
	}
	qproj := filepath.Join(mnt, ".qwen", "projects")
	for _, name := range []string{qwenagent.Folder(agents.CanonicalCwd), "-src-api"} {
		require.NoError(t, os.MkdirAll(filepath.Join(qproj, name, "chats"), 0o755))
		chat := filepath.Join(qproj, name, "chats", fmt.Sprintf("%08d-0000-4000-8000-000000000000.jsonl", len(name)))
		require.NoError(t, os.WriteFile(chat, []byte(`{"text":"`+needle+`"}`+"\n"), 0o600))
	}
	assert.FileExists(t, filepath.Join(gtmp, "webapp", "chats", "session-2026-11-26T01-00-api.jsonl"), "a view shows every chat")

	want := treeOf(t, sess)
	claims := []string{}
	for _, name := range []string{"webapp", "api"} {
		for _, dir := range []string{".gemini/tmp/" + name, ".gemini/tmp/" + name + "/" + geminiagent.Owner} {
			require.Contains(t, want, dir, "the store keeps the name's claim")
			delete(want, dir)
			claims = append(claims, dir)
		}
	}
	tmp := t.TempDir()
	sh(t, tmp, "tar czf s.tgz -C "+filepath.Dir(mnt)+" s1 && mkdir out && tar xzf s.tgz -C out")
	got := treeOf(t, filepath.Join(tmp, "out", "s1"))
	t.Logf("left out of the archive, as documented: %v", claims)
	sameTree(t, "tar", want, got)

	storeHits, mountHits := grepL(t, sess, needle), grepL(t, mnt, needle)
	t.Logf("grep -rl: store %d files, mount %d files", len(storeHits), len(mountHits))
	assert.Equal(t, storeHits, mountHits, "each chat once")
}

// entry is what a copy must keep of a file: its type, mode bits, owner, and its content (a hash; a link's target),
// and a file's or folder's mtime in seconds (what every archive format keeps).
type entry struct {
	Mode     fs.FileMode
	UID, GID uint32
	Content  string
	Mtime    int64
}

// treeOf walks root without following links: every path below it (relative) and what a copy must keep of it.
func treeOf(t *testing.T, root string) map[string]entry {
	t.Helper()
	tree := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		e := entry{Mode: info.Mode(), UID: st.Uid, GID: st.Gid}
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			e.Content, e.Mtime = hex.EncodeToString(sum[:]), info.ModTime().Unix()
		case info.IsDir():
			e.Mtime = info.ModTime().Unix()
		case info.Mode()&fs.ModeSymlink != 0:
			e.Content, err = os.Readlink(p)
			if err != nil {
				return err
			}
		}
		tree[rel] = e
		return nil
	})
	require.NoError(t, err)
	return tree
}

// sameTree asserts a copy made by how is the store's tree, naming each path that differs.
func sameTree(t *testing.T, how string, want, got map[string]entry) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s: store %+v, copy %+v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	slices.Sort(diffs)
	t.Logf("%s through the mount: %d paths, %d differ from the store's", how, len(got), len(diffs))
	assert.Empty(t, diffs, "%s through the mount restores the store's session", how)
}

// grepL is grep -rl's list of the files below dir holding needle, relative to dir, sorted (duplicates kept).
func grepL(t *testing.T, dir, needle string) []string {
	t.Helper()
	cmd := exec.Command("grep", "-rl", "--", needle, ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "grep -rl in %s", dir)
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		files = append(files, strings.TrimPrefix(l, "./"))
	}
	slices.Sort(files)
	return files
}

// duKiB is du -s of dir in KiB.
func duKiB(t *testing.T, dir string) int {
	t.Helper()
	out, err := exec.Command("du", "-sk", dir).Output()
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.Fields(string(out))[0])
	require.NoError(t, err)
	return n
}

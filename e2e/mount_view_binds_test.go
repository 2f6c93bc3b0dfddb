package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/e2e/geministub"
	"github.com/sessionfs/sessionfs/layout"
)

// A transcript view in use is a bind of the canonical folder onto its name (mount/viewbinds.go, nodes/view.go): an
// append through a view binds it, a lookup of another name of the transcript folder takes it back first, and it is
// released once idle.

// viewBindsOf lists the transcript views bound over the mounted session id, by name.
func viewBindsOf(t *testing.T, m *mounted, id string) map[string]mountEntry {
	t.Helper()
	out := map[string]mountEntry{}
	prefix := filepath.Join(m.session(id), ".claude", "projects") + "/"
	for _, e := range mountsUnder(t, m.session(id)) {
		if name, ok := strings.CutPrefix(e.point, prefix); ok && !strings.Contains(name, "/") {
			out[name] = e
		}
	}
	return out
}

// appendLine appends one line to p: open, write, close, as an agent appends to its transcript.
func appendViewLine(t *testing.T, p, line string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// bindByAppending appends to p (in view name of session id) until the view is bound; it returns the lines
// appended.
func bindByAppending(t *testing.T, m *mounted, id, name, p string) int {
	t.Helper()
	n := 0
	eventually(t, 10*time.Second, func() bool {
		appendViewLine(t, p, `{"n":0}`)
		n++
		_, ok := viewBindsOf(t, m, id)[name]
		return ok
	}, "view %s bound while appended through; the daemon said: %s", name, m.log)
	return n
}

// holdInBind binds view name by appending to p, then opens p through that bind (the bind is released when no file
// inside is open, every viewIdlePoll: one released between the two is bound again). It returns p, open, and the
// lines appended.
func holdInBind(t *testing.T, m *mounted, id, name, p string) (*os.File, int) {
	t.Helper()
	n := 0
	var held *os.File
	eventually(t, 20*time.Second, func() bool {
		n += bindByAppending(t, m, id, name, p)
		f, err := os.Open(p)
		require.NoError(t, err)
		if e, ok := viewBindsOf(t, m, id)[name]; ok && mountIDOf(t, f) == e.id {
			held = f
			return true
		}
		f.Close()
		return false
	}, "%s opened through its view's bind", p)
	return held, n
}

// mountIDOf is the id of the mount f was opened in.
func mountIDOf(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no mnt_id in fdinfo: %s", b)
	return ""
}

func aliasesOf(t *testing.T, store, id string) []string {
	t.Helper()
	var meta layout.Meta
	raw, err := os.ReadFile(filepath.Join(store, "sessions", id, "session.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &meta))
	return meta.Aliases
}

// TestViewBoundWhileAppended: appends through a view bind it (the mount table shows the store's canonical folder
// there, nosuid and nodev, its name recorded as an alias first); what is appended through the bind is the
// canonical file's; a lookup of another name takes the bind back before it is answered (so a rename between two
// names is one mount's, and Claude Code's set-aside is still refused); doctor counts it and unmount detaches it;
// the bind is released when idle, and kept while a file inside is open.
func TestViewBoundWhileAppended(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canonical, uuid+".jsonl"), []byte("{}\n"), 0o600))
	m := mount(t, store)
	projects := filepath.Join(m.session("s1"), ".claude", "projects")
	view := filepath.Join(projects, "-home-u-proj")
	p := filepath.Join(view, uuid+".jsonl")

	// A file held open inside keeps the bind over the appends and doctor (released idle otherwise: tested below).
	held, appended := holdInBind(t, m, "s1", "-home-u-proj", p)
	n := 1 + appended
	e := viewBindsOf(t, m, "s1")["-home-u-proj"]
	assert.NotContains(t, e.fstype, "fuse", "the store's filesystem")
	assert.Equal(t, canonical, e.root, "the canonical folder")
	assert.Contains(t, e.opts, "nosuid")
	assert.Contains(t, e.opts, "nodev")
	assert.Contains(t, aliasesOf(t, store, "s1"), "-home-u-proj", "the alias is recorded before the bind")
	for i := 0; i < 1000; i++ {
		appendViewLine(t, p, `{"through":"bind"}`)
	}
	n += 1000
	assert.Equal(t, n, lineCount(t, filepath.Join(canonical, uuid+".jsonl")), "every line in the canonical file")
	r := cli(t, store, "doctor")
	assert.Regexp(t, `binds +2 folders bound over `+m.mnt, r.stdout+r.stderr, "the workspace and the view")
	require.NoError(t, held.Close())

	// A listing of the transcript folder takes the bind back too (READDIRPLUS looks every name up): Claude Code's
	// start-up clean-up and rm -rf of .claude list it before they remove anything there, so that reaches the trash.
	_, err := os.ReadDir(projects)
	require.NoError(t, err)
	assert.NotContains(t, viewBindsOf(t, m, "s1"), "-home-u-proj", "taken back at the listing")
	n += bindByAppending(t, m, "s1", "-home-u-proj", p)

	// Another name looked up: the bind is gone before the lookup returns. Claude Code's /cd set-aside, then its
	// move onto the same file, are one mount's renames: refused and a no-op, the transcript whole.
	other := filepath.Join(projects, "-home-u-other")
	_, err = os.Stat(other)
	require.NoError(t, err)
	assert.NotContains(t, viewBindsOf(t, m, "s1"), "-home-u-proj", "taken back at the other name's lookup")
	err = os.Rename(p, filepath.Join(other, uuid+".jsonl.superseded-1764100000000"))
	assert.ErrorIs(t, err, syscall.ENOENT, "the set-aside of a file onto itself is refused as before")
	require.NoError(t, os.Rename(p, filepath.Join(other, uuid+".jsonl")), "a move between two names is no EXDEV")
	assert.Equal(t, n, lineCount(t, filepath.Join(canonical, uuid+".jsonl")), "nothing lost")

	// Bound again once appended through (after viewContended), kept while a file inside is open, released idle.
	held, _ = holdInBind(t, m, "s1", "-home-u-proj", p)
	time.Sleep(3 * viewIdlePoll) // no event says "still bound": it must stay over polls that would expire it idle
	assert.Contains(t, viewBindsOf(t, m, "s1"), "-home-u-proj", "a file open inside keeps it")
	require.NoError(t, held.Close())
	eventually(t, 4*viewIdlePoll, func() bool { _, ok := viewBindsOf(t, m, "s1")["-home-u-proj"]; return !ok },
		"released once idle")
	// A removal through the view, not bound, goes to the transcript trash as before (first: an append through FUSE
	// asks for the bind again, which lands within milliseconds).
	require.NoError(t, os.Remove(p))
	assert.Contains(t, ok(t, store, "trash", "ls", "s1"), uuid)
	require.NoError(t, os.WriteFile(p, []byte(`{"after":"release"}`+"\n"), 0o600))
	assert.Equal(t, 1, lineCount(t, filepath.Join(canonical, uuid+".jsonl")), "through FUSE again")

	// The canonical folder replaced behind the mount (a run binds the store's folder): the bind goes although a
	// file inside is held, and what is written through the view lands in the new folder.
	require.NoError(t, os.WriteFile(filepath.Join(canonical, uuid+".jsonl"), []byte("{}\n"), 0o600))
	bindByAppending(t, m, "s1", "-home-u-proj", p)
	held, err = os.Open(p)
	require.NoError(t, err)
	require.NoError(t, os.Rename(canonical, canonical+".old"))
	require.NoError(t, os.Mkdir(canonical, 0o700))
	eventually(t, 4*viewIdlePoll, func() bool { _, ok := viewBindsOf(t, m, "s1")["-home-u-proj"]; return !ok },
		"the bind of the replaced folder goes")
	require.NoError(t, held.Close())
	require.NoError(t, os.WriteFile(filepath.Join(view, "new.jsonl"), []byte("{}\n"), 0o600))
	assert.FileExists(t, filepath.Join(canonical, "new.jsonl"), "written in the store's folder of that name")

	// unmount detaches a view bind as it does the workspace's; one a killed daemon left, the next mount clears.
	keep := filepath.Join(view, "keep.txt")
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "keep.txt"), nil, 0o600))
	bindByAppending(t, m, "s1", "-home-u-proj", keep)
	r = cli(t, store, "unmount", m.mnt)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "busy", "the binds went first, so the mount was not busy")
	assert.Empty(t, mountsUnder(t, m.mnt), "nothing left mounted beneath the mountpoint")
	_ = m.cmd.Wait()
	m.start(t)
	bindByAppending(t, m, "s1", "-home-u-proj", keep)
	m.kill(t)
	require.NotEmpty(t, viewBindsOf(t, m, "s1"), "a killed daemon leaves its view bind")
	m.start(t)
	waitBound(t, m, "s1")
	assert.Empty(t, viewBindsOf(t, m, "s1"), "cleared with the stale mount")
}

// viewIdlePoll is mount's: a view bind unused this long is released within twice as long.
const viewIdlePoll = 2 * time.Second

// TestViewBindResumeFromAnotherCwd: Claude Code resumed from a cwd outside the mount, interactively, appends
// through that cwd's view: the view is bound while it does (the mount table shows it during a turn), every turn goes
// on in the one transcript, the alias is recorded, /cd with the view bound keeps the conversation whole, and once
// Claude is gone the bind goes. A short `claude -p
// --resume` appends a few lines in milliseconds at its end (strace): it resumes through FUSE as before, checked too.
func TestViewBindResumeFromAnotherCwd(t *testing.T) {
	needRootMount(t)
	_, err := exec.LookPath("tmux")
	need(t, err == nil, "tmux is missing (apt-get install tmux): the resume is interactive")
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		store, api := claudeSetup(t)
		m := mount(t, store)
		cfg := filepath.Join(m.session("s1"), ".claude")
		out, err := claudeRun(t, c.path, api.URL, cfg, filepath.Join(m.session("s1"), "workspace"), "-p", "hello")
		require.NoError(t, err, out)
		canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
		files := transcripts(t, canonical)
		require.Len(t, files, 1)
		uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		short := t.TempDir()
		out, err = claudeRun(t, c.path, api.URL, cfg, short, "-p", "--resume", uuid, "a short one")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")

		outside := t.TempDir()
		name := claudeName(outside)
		require.NoError(t, os.Mkdir(filepath.Join(outside, "sub"), 0o755))
		claudeTrusts(t, filepath.Join(store, "sessions", "s1", ".claude"), outside, filepath.Join(outside, "sub"))
		env := append(claudeEnv(t, api.URL), "TERM=xterm-256color", "CLAUDE_CONFIG_DIR="+cfg)
		tm := startTmux(t, outside, env, c.path, "--resume", uuid)
		tm.waitFor("❯", time.Minute)
		time.Sleep(time.Second) // the prompt is drawn before it takes keys
		// The view is bound a few milliseconds after the turn's first append, and a turn against the stub is short:
		// on a loaded machine one turn may end before the bind is there. Across the two it is seen.
		boundInATurn := false
		for turn, text := range []string{"first turn from outside", "second turn from outside"} {
			n := lineCount(t, files[0])
			seen := watchBound(t, m, "s1", name)
			tm.send(text, "Enter")
			eventually(t, time.Minute, func() bool {
				b, _ := os.ReadFile(files[0])
				return strings.Count(string(b), apistub.Reply) >= turn+3 && strings.Contains(string(b), text)
			}, "turn %d is not in the one transcript: %s", turn, tm.pane())
			if seen() {
				boundInATurn = true
			} else {
				t.Logf("%s not seen bound during turn %d", name, turn)
			}
			assert.Equal(t, files, transcripts(t, canonical), "the one transcript")
			assert.Greater(t, lineCount(t, files[0]), n)
		}
		assert.True(t, boundInATurn, "%s bound during a turn", name)
		eventually(t, 5*time.Second, func() bool { return slices.Contains(aliasesOf(t, store, "s1"), name) }, "alias %s recorded", name)

		// /cd while the view is bound (a file inside held open keeps it): its mkdir of the new cwd's name takes the
		// bind back, so the move of the transcript between the two names is one mount's (no EXDEV, whose fallback
		// copies the file onto itself and removes it), and the conversation goes on in the one transcript.
		require.NoError(t, os.WriteFile(filepath.Join(canonical, "keep.txt"), nil, 0o600))
		keep := filepath.Join(cfg, "projects", name, "keep.txt")
		bindByAppending(t, m, "s1", name, keep)
		held, err := os.Open(keep)
		require.NoError(t, err)
		defer held.Close()
		tm.send("/cd sub")
		time.Sleep(time.Second) // let the command menu settle, or Enter picks from it
		tm.send("Enter")
		eventually(t, 30*time.Second, func() bool {
			p := tm.pane()
			return strings.Contains(p, "Moved to") || strings.Contains(p, "Couldn't")
		}, "/cd said nothing: %s", tm.pane())
		require.Contains(t, tm.pane(), "Moved to "+filepath.Join(outside, "sub"), "/cd failed")
		tm.send("after cd", "Enter")
		eventually(t, time.Minute, func() bool {
			b, _ := os.ReadFile(files[0])
			return strings.Count(string(b), apistub.Reply) >= 5 && strings.Contains(string(b), "after cd")
		}, "the turn after /cd is not in the one transcript: %s", tm.pane())
		assert.Equal(t, files, transcripts(t, canonical), "one transcript holds the whole conversation")
		assert.Empty(t, setAside(t, filepath.Join(store, "sessions", "s1", ".claude", "projects")), "nothing was set aside")
		assert.NoError(t, held.Close())
		tm.stop()
		eventually(t, 4*viewIdlePoll, func() bool { _, ok := viewBindsOf(t, m, "s1")[name]; return !ok }, "released once idle")
		out, err = claudeRun(t, c.path, api.URL, cfg, t.TempDir(), "-p", "--resume", uuid, "and from yet another cwd")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
		assert.Equal(t, files, transcripts(t, canonical), "the one transcript")
	})
}

// watchBound samples the mount table until the returned function is called, which says whether view name of
// session id was seen bound meanwhile.
func watchBound(t *testing.T, m *mounted, id, name string) func() bool {
	stop, done := make(chan struct{}), make(chan bool)
	go func() {
		seen := false
		for {
			select {
			case <-stop:
				done <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, ok := viewBindsOf(t, m, id)[name]; ok {
				seen = true
			}
		}
	}()
	return func() bool { close(stop); return <-done }
}

// TestViewBindGeminiAlongside: Gemini CLI resumed from a cwd outside the session, through the mount, while a
// Claude transcript view of the same session is bound and busy. Gemini's project folders keep a claim file each
// (an Own file: a bind of the canonical folder would show its claim, not the name's), so they are never bound;
// Gemini's walk of its folders leaves the Claude view bound.
func TestViewBindGeminiAlongside(t *testing.T) {
	needRootMount(t)
	gemini := agentCLI(t, "gemini")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	require.NoError(t, os.WriteFile(filepath.Join(canonical, "t.jsonl"), []byte("{}\n"), 0o600))
	m := mount(t, store)
	api, err := geministub.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { api.Close() })
	geminiSetup(t, store, m.session("s1"))
	env := agentEnv(t, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+api.URL)
	run := func(args ...string) []string { return append([]string{gemini, "-m", "gemini-2.5-flash"}, args...) }
	r := agentExec(t, store, "gemini", env, "", run("-p", "hello from the workspace")...)
	require.Equal(t, 0, r.code, "%s\n%s", r.stdout, r.stderr)
	chats := filepath.Join(store, "sessions", "s1", ".gemini", "tmp", "workspace", "chats")
	require.Len(t, glob(t, filepath.Join(chats, "session-*.jsonl")), 1)

	p := filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-proj", "t.jsonl")
	bindByAppending(t, m, "s1", "-home-u-proj", p)
	held, err := os.Open(p) // through the bind: it stays
	require.NoError(t, err)
	defer held.Close()
	out, err := agentOutside(t, store, "gemini", t.TempDir(), env, run("--skip-trust", "--resume", "latest", "-p", "again from outside")...)
	require.NoError(t, err, out)
	assert.Contains(t, out, geministub.Reply)
	assert.NotContains(t, out, "No previous sessions")
	chat := ""
	for _, f := range glob(t, filepath.Join(chats, "session-*.jsonl")) {
		b, _ := os.ReadFile(f)
		chat += string(b)
	}
	assert.Contains(t, chat, "again from outside", "resumed in the session's chat")
	assert.Contains(t, viewBindsOf(t, m, "s1"), "-home-u-proj", "the Claude view stays bound")
	for _, e := range mountsUnder(t, m.session("s1")) {
		assert.NotContains(t, e.point, "/.gemini/", "Gemini's views are never bound")
	}
}

// TestBoundViewIsNotWatched: once a view is bound, what is appended through it costs the daemon nothing: the
// canonical folder's watch (which costs every write an inotify event) goes once its events find the bind. Released
// idle, the view is served by FUSE again and watched from its first request: an append behind the mount shows
// through it.
func TestBoundViewIsNotWatched(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "5a1e0c3d-9b1f-4c55-8d1e-0f6a2b7c9d10"
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	stored := filepath.Join(canonical, uuid+".jsonl")
	require.NoError(t, os.WriteFile(stored, []byte("{}\n"), 0o600))
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(canonical, &st))
	m := mount(t, store)
	p := filepath.Join(m.session("s1"), ".claude", "projects", "-home-u-proj", uuid+".jsonl")
	_, err := os.Stat(p)
	require.NoError(t, err)
	require.True(t, watchedInodes(t, m.cmd.Process.Pid)[st.Ino], "a view FUSE serves is watched")

	bindByAppending(t, m, "s1", "-home-u-proj", p)
	appends := 0
	eventually(t, 5*time.Second, func() bool {
		appendViewLine(t, p, `{"through":"bind"}`)
		appends++
		return !watchedInodes(t, m.cmd.Process.Pid)[st.Ino]
	}, "the canonical folder is not watched while its view is bound")
	t.Logf("unwatched after %d appends through the bind", appends)

	eventually(t, 4*viewIdlePoll, func() bool { _, ok := viewBindsOf(t, m, "s1")["-home-u-proj"]; return !ok },
		"released once idle")
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.True(t, watchedInodes(t, m.cmd.Process.Pid)[st.Ino], "watched again from FUSE's first request")
	f, err := os.OpenFile(stored, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"behind":"the mount"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	eventually(t, 5*time.Second, func() bool {
		now, err := os.Stat(p)
		require.NoError(t, err)
		return now.Size() > fi.Size()
	}, "an append behind the mount shows through the view")
}

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/layout"
)

// fakeHome makes a ~/.claude with real conversations written by the claude CLI: one in each of two projects,
// one of them with a subagent, plus a file that is not a transcript.
func fakeHome(t *testing.T, claude, api string) (claudeDir string, projects []string) {
	t.Helper()
	home := t.TempDir()
	claudeDir = filepath.Join(home, ".claude")
	for i, prompt := range []string{"hello from web", "please " + apistub.AgentTrigger} {
		p := filepath.Join(home, "src", []string{"web", "api"}[i])
		require.NoError(t, os.MkdirAll(p, 0o755))
		out, err := claudeRun(t, claude, api, claudeDir, p, "-p", prompt)
		require.NoError(t, err, out)
		projects = append(projects, p)
	}
	bad := filepath.Join(claudeDir, "projects", "-junk")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "broken.jsonl"), []byte("this is not json\nnor this\n"), 0o600))
	return claudeDir, projects
}

func uuidsIn(t *testing.T, claudeDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(claudeDir, "projects", "-*", "*.jsonl"))
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if !strings.Contains(f, "-junk") {
			out = append(out, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
		}
	}
	return out
}

// TestImport: existing Claude Code history becomes sessions, the originals untouched, and a second import adds
// only what is new.
func TestImport(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		api := stub(t, "127.0.0.1:0")
		claudeDir, projects := fakeHome(t, claude, api.URL)
		uuids := uuidsIn(t, claudeDir)
		require.Len(t, uuids, 2)
		before := snapshot(t, claudeDir)
		store := t.TempDir()

		r := cli(t, store, "import", "--from", claudeDir, "--dry-run")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "would import 2 conversations")
		ids, _ := os.ReadDir(filepath.Join(store, "sessions"))
		assert.Empty(t, ids, "a dry run changes nothing")

		r = cli(t, store, "import", "--from", claudeDir)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "imported 2 conversations (0 unchanged) into 2 new sessions; 1 file skipped")
		assert.Contains(t, r.stderr, "broken.jsonl", "the malformed file is reported")
		for _, u := range uuids {
			canon := filepath.Join(store, "sessions", u, ".claude", "projects", "-session-workspace")
			src, _ := filepath.Glob(filepath.Join(claudeDir, "projects", "*", u+".jsonl"))
			require.Len(t, src, 1)
			a, err := os.Stat(src[0])
			require.NoError(t, err)
			b, err := os.Stat(filepath.Join(canon, u+".jsonl"))
			require.NoError(t, err, "the transcript is in the session's canonical folder")
			assert.Equal(t, a.Size(), b.Size())
			assert.True(t, a.ModTime().Equal(b.ModTime()), "the mtime is kept")
		}
		var meta layout.Meta
		raw, err := os.ReadFile(filepath.Join(store, "sessions", uuids[0], "session.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		assert.NotEmpty(t, meta.Cwds, "the conversation's cwd is recorded")
		assert.Contains(t, projects, meta.Cwds[0])
		agents, _ := filepath.Glob(filepath.Join(store, "sessions", "*", ".claude", "projects", "-session-workspace", "*", "subagents", "agent-*.jsonl"))
		assert.Len(t, agents, 1, "the sidecar folder comes along")
		assert.Equal(t, before, snapshot(t, claudeDir), "the originals are untouched")

		assert.Contains(t, ok(t, store, "import", "--from", claudeDir), "imported 0 conversations (2 unchanged)")
		// A conversation that grew is copied again.
		out, err := claudeRun(t, claude, api.URL, claudeDir, projects[0], "-p", "--continue", "more")
		require.NoError(t, err, out)
		assert.Contains(t, ok(t, store, "import", "--from", claudeDir), "imported 1 conversation (1 unchanged)")

		// --project and --into gather one project's conversations into one session.
		other := t.TempDir()
		assert.Contains(t, ok(t, other, "import", "--from", claudeDir, "--project", projects[1], "--into", "api"),
			"imported 1 conversation (0 unchanged) into 1 new session")
		convs, _ := filepath.Glob(filepath.Join(other, "sessions", "api", ".claude", "projects", "-session-workspace", "*.jsonl"))
		assert.Len(t, convs, 1)
		// A plain import afterwards brings the gathered conversation up to date in api: no second copy of it.
		assert.Contains(t, ok(t, other, "import", "--from", claudeDir), "imported 1 conversation (1 unchanged) into 1 new session")
		ids, _ = os.ReadDir(filepath.Join(other, "sessions"))
		assert.Len(t, ids, 2, "api and one session for the other conversation")
		// A dry run with --into counts the one session the run would make.
		var rep struct {
			Sessions []string `json:"sessions"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, t.TempDir(), "import", "--from", claudeDir, "--into", "all", "--dry-run", "--json")), &rep))
		assert.Equal(t, []string{"all"}, rep.Sessions)

		// An imported conversation resumes from any cwd through the mount.
		m := mount(t, store)
		out, err = claudeRun(t, claude, api.URL, filepath.Join(m.session(uuids[0]), ".claude"), t.TempDir(), "-p", "--resume", uuids[0], "resumed")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "No conversation found")
	})
}

// snapshot maps every file under dir to its size and mtime.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out[p] = fmt.Sprintf("%v/%d", fi.ModTime(), fi.Size())
		}
		return err
	}))
	return out
}

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

// TestWatch: watch prints each new message of a session as one readable line, subagents marked.
func TestWatch(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		api := stub(t, "127.0.0.1:0")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		for _, asJSON := range []bool{false, true} {
			args := []string{"watch", "s1"}
			if asJSON {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
			pr, pw := io.Pipe()
			cmd.Stdout = pw
			require.NoError(t, cmd.Start())
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			time.Sleep(300 * time.Millisecond) // let it start watching
			p := filepath.Join(store, "sessions", "s1")
			out, err := claudeRun(t, claude, api.URL, filepath.Join(p, ".claude"), filepath.Join(p, "workspace"), "-p", "watch me "+apistub.AgentTrigger)
			require.NoError(t, err, out)
			var seen []string
			deadline := time.After(10 * time.Second)
		collect:
			for {
				select {
				case l := <-lines:
					seen = append(seen, l)
					all := strings.Join(seen, "\n")
					if strings.Contains(all, "[agent-") && strings.Contains(all, "assistant "+apistub.Reply) && strings.Count(all, apistub.Reply) >= 2 ||
						asJSON && len(seen) >= 6 {
						break collect
					}
				case <-deadline:
					break collect
				}
			}
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			pw.Close()
			all := strings.Join(seen, "\n")
			if asJSON {
				require.NotEmpty(t, seen)
				for _, l := range seen {
					assert.True(t, json.Valid([]byte(l)), "%q", l)
				}
				continue
			}
			assert.Regexp(t, `(?m)^[0-9a-f]{8} \d\d:\d\d:\d\d user\s+watch me`, all)
			assert.Contains(t, all, "→ Agent(")
			assert.Contains(t, all, "[agent-", "subagent messages are marked")
			assert.Contains(t, all, "assistant "+apistub.Reply)
		}
	})
}

// TestDoctor: each check is one OK/WARN/FAIL line, and a stale mount is a FAIL with the fix.
func TestDoctor(t *testing.T) {
	store := t.TempDir()
	m := mount(t, store)
	r := cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^OK\s+fuse\s`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+store\s+`+regexpQuote(store)+` writable`, r.stdout)
	assert.Regexp(t, `(?m)^OK\s+mount\s+`+regexpQuote(m.mnt), r.stdout)
	assert.Regexp(t, `(?m)^OK\s+sharing\s+the store's filesystem is not one other hosts mount`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+watches\s+fs\.inotify\.max_user_watches \d+: `, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+docker\s`, r.stdout)
	assert.Regexp(t, `(?m)^(OK|WARN)\s+claude\s`, r.stdout)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		assert.Regexp(t, `^(OK|WARN|FAIL) `, line)
	}
	m.kill(t)
	r = cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^FAIL mount\s+.*stale.*sessionfs unmount`, r.stdout)
	assert.Equal(t, 1, r.code, "a FAIL makes doctor fail")
}

// TestCompletionAndHelp: shell completion scripts, session ids completed, examples in help.
func TestCompletionAndHelp(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "alpha")
	ok(t, store, "new", "beta")
	for _, shell := range []string{"bash", "zsh", "fish"} {
		assert.Contains(t, ok(t, store, "completion", shell), "sessionfs", shell)
	}
	out := ok(t, store, "__complete", "show", "al")
	assert.Contains(t, out, "alpha")
	assert.NotContains(t, out, "beta")
	assert.Contains(t, ok(t, store, "exec", "--help"), "Examples:")
}

// TestSystemdReady: under systemd (NOTIFY_SOCKET) the mount says READY=1 once it serves.
func TestSystemdReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	m := mount(t, t.TempDir())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	assert.Contains(t, string(buf[:n]), "READY=1")
	assert.True(t, isFUSEMount(m.mnt))
	unit, err := os.ReadFile("../contrib/systemd/sessionfs.service")
	require.NoError(t, err)
	assert.Contains(t, string(unit), "Type=notify")
}

// TestShareCredentials: --share-credentials makes the session use the user's credentials file.
func TestShareCredentials(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	creds := filepath.Join(home, ".claude", ".credentials.json")
	require.NoError(t, os.WriteFile(creds, []byte(`{"token":"t"}`), 0o600))
	store := t.TempDir()
	r := cliIn(t, store, "", []string{"HOME=" + home}, "new", "s1", "--share-credentials")
	require.Equal(t, 0, r.code, r.stderr)
	target, err := os.Readlink(filepath.Join(store, "sessions", "s1", ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, creds, target)
	m := mount(t, store)
	b, err := os.ReadFile(filepath.Join(m.session("s1"), ".claude", ".credentials.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"token":"t"}`, string(b))
}

// ls filters by label, prints ids alone (-q) or through a template (--format), as docker ls does; show takes
// --format too.
func TestListFilterQuietFormat(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "a1", "--label", "team=web", "--label", "stage=review")
	ok(t, store, "new", "a2", "--label", "team=web")
	ok(t, store, "new", "b1", "--label", "team=cli")
	assert.Equal(t, "a1\na2\nb1\n", ok(t, store, "ls", "-q"))
	assert.Equal(t, "a1\na2\n", ok(t, store, "ls", "-q", "--filter", "label=team=web"))
	assert.Equal(t, "a1\n", ok(t, store, "ls", "-q", "--filter", "label=team=web", "--filter", "label=stage"))
	assert.Equal(t, "b1 team=cli 0\n", ok(t, store, "ls", "--filter", "label=team=cli", "--format", "{{.ID}} {{range $k, $v := .Labels}}{{$k}}={{$v}}{{end}} {{.Conversations}}"))
	assert.Equal(t, filepath.Join(store, "sessions", "a2", "workspace")+"\n", ok(t, store, "show", "a2", "--format", "{{.Store.Workspace}}"))
	for _, args := range [][]string{
		{"ls", "--filter", "team=web"}, {"ls", "--format", "{{.Nope"}, {"ls", "-q", "--json"}, {"show", "a1", "--format", "{{", "--json"},
	} {
		r := cli(t, store, args...)
		assert.Equal(t, 125, r.code, "%v", args)
		assert.Contains(t, r.stderr, "--help)", "%v: a usage error", args)
	}
}

// Labels are edited after creation (KEY=VALUE sets, KEY- removes); rename gives a session a new id; runs lists
// what ran in a session, a run in progress included.
func TestLabelRenameRuns(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1", "--label", "team=web")
	assert.Equal(t, "s1 stage=review\n", ok(t, store, "label", "s1", "stage=review", "team-"))
	assert.Equal(t, "stage-\nstage=\n:6\n", ok(t, store, "__complete", "label", "s1", ""), "completion offers its labels")
	assert.Equal(t, "s1\n", ok(t, store, "ls", "-q", "--filter", "label=stage=review"))
	r := cli(t, store, "label", "s1", "=x")
	assert.Equal(t, 125, r.code)

	assert.Equal(t, 3, cli(t, store, "exec", "s1", "--", "sh", "-c", "exit 3").code)
	marker := filepath.Join(t.TempDir(), "started")
	done := make(chan result, 1)
	go func() { done <- cli(t, store, "exec", "s1", "--", "sh", "-c", "touch "+marker+"; sleep 1") }()
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }, "the second run never started")
	assert.Regexp(t, `(?m)^Runs\s+2, the last .* on local, running`, ok(t, store, "show", "s1"))
	out := ok(t, store, "runs", "s1")
	assert.Regexp(t, `(?m)^\S+ \S+\s+local\s+\d\S*s\s+3\s+sh -c exit 3$`, out)
	assert.Regexp(t, `(?m)^\S+ \S+\s+local\s+running\s+-\s+sh -c touch`, out, "a run in progress is listed")
	<-done
	var runs []layout.Run
	require.NoError(t, json.Unmarshal([]byte(ok(t, store, "runs", "s1", "--json")), &runs))
	require.Len(t, runs, 2, "one record per run")
	assert.False(t, runs[1].End.IsZero(), "the record is completed when the run ends")
	ok(t, store, "new", "s2")
	assert.Equal(t, "[]\n", ok(t, store, "runs", "s2", "--json"))
	// A runner killed before it recorded the end leaves its run unfinished, not running forever.
	killed := exec.Command(bin, "exec", "s2", "--", "sh", "-c", "touch "+marker+"2; sleep 1")
	killed.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	require.NoError(t, killed.Start())
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker + "2"); return err == nil }, "the run never started")
	require.NoError(t, killed.Process.Kill())
	_ = killed.Wait()
	assert.Regexp(t, `(?m)\s+local\s+unfinished\s+-\s+sh -c touch`, ok(t, store, "runs", "s2"))

	assert.Equal(t, "s1 -> fix-login\n", ok(t, store, "rename", "s1", "fix-login"))
	assert.Equal(t, "fix-login\ns2\n", ok(t, store, "ls", "-q"))
	r = cli(t, store, "rename", "fix-login", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already exists")
	assert.Contains(t, ok(t, store, "show", "fix-login"), "Runs        2,")
}

// mount --daemon returns once the mount serves and prints the daemon's pid; the daemon logs to --log and ends
// with sessionfs unmount. A mount that cannot come up returns its error, not a pid.
func TestMountDaemon(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	mnt := filepath.Join(t.TempDir(), "mnt")
	logPath := filepath.Join(t.TempDir(), "state", "mount.log")
	r := cli(t, store, "mount", "--daemon", "--log", logPath, mnt)
	pid := 0
	_, _ = fmt.Sscan(r.stdout, &pid)
	t.Cleanup(func() {
		if isFUSEMount(mnt) || staleMount(mnt) {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.Equal(t, 0, r.code, r.stderr)
	require.Greater(t, pid, 0, "stdout is the pid: %q", r.stdout)
	assert.Contains(t, r.stderr, logPath)
	assert.True(t, isFUSEMount(mnt), "the mount serves when mount --daemon returns")
	assert.DirExists(t, filepath.Join(mnt, "sessions", "s1", "workspace"))
	assert.NoError(t, syscall.Kill(pid, 0), "the daemon runs")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(b), "serving "+store)
	if os.Geteuid() == 0 {
		// Started with its bounding set shrunk already (confine.StartDaemon), the daemon is as confined as a
		// mount in the foreground: every thread holds the listed capabilities, and its helper its own.
		keep := uint64(1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<6 | 1<<7 | 1<<21)
		for _, st := range threadStatus(t, pid) {
			assert.Equal(t, "2", st["Seccomp"])
			for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
				got, err := strconv.ParseUint(st[set], 16, 64)
				require.NoError(t, err)
				assert.Equal(t, keep, got, "%s = %s", set, st[set])
			}
		}
		helper := procStatus(t, helperPID(t, pid))
		got, err := strconv.ParseUint(helper["CapBnd"], 16, 64)
		require.NoError(t, err)
		assert.Equal(t, keep|1<<19|1<<23, got, "the helper's bounding set")
	}

	r = cli(t, store, "mount", "--daemon", "--log", logPath, filepath.Join(t.TempDir(), "again"))
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "already mounted at "+mnt)
	assert.Empty(t, r.stdout)

	ok(t, store, "unmount", mnt)
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the daemon outlived its mount")
	assert.False(t, isFUSEMount(mnt))
}

// rename refuses a session something runs in (its run lease is held).
func TestRenameRefusesARunningSession(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	marker := filepath.Join(t.TempDir(), "started")
	done := make(chan result, 1)
	go func() { done <- cli(t, store, "exec", "s1", "--", "sh", "-c", "touch "+marker+"; sleep 2") }()
	eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }, "the run never started")
	r := cli(t, store, "rename", "s1", "s2")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "session s1 is running")
	assert.DirExists(t, filepath.Join(store, "sessions", "s1"))
	assert.Equal(t, 0, (<-done).code)
	assert.Equal(t, "s1 -> s2\n", ok(t, store, "rename", "s1", "s2"))
}

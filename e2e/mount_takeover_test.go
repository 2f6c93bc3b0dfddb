package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// takeoverLoop is an agent on the mount ($1: its session folder, as it sees it): from a cwd in its transcript
// folder (a node id the kernel holds across every kill), every 50 ms it appends a numbered line to its
// transcript, and to a log it holds open (its file handle and passthrough backing file opened by a daemon killed
// since), reads that log anew, writes .claude/c.json as agents write their settings (a new file renamed over it)
// and reads it back, makes and removes a folder, reads .claude/settings.json and stats its session, and prints
// when it did (the uptime, in seconds: busybox's date has no nanoseconds); it stops at the first error, and when
// $2 exists.
const takeoverLoop = `cd "$1/.claude/projects/-session-workspace" || exit 9
exec 3>> held.jsonl || exit 8
i=0
while [ ! -e "$2" ]; do
	i=$((i+1))
	echo "{\"n\":$i}" >> t.jsonl || exit 1
	echo "{\"n\":$i}" >&3 || exit 4
	cat held.jsonl > /dev/null || exit 5
	echo "{\"n\":$i}" > "$1/.claude/.c.tmp" && mv "$1/.claude/.c.tmp" "$1/.claude/c.json" || exit 6
	read c < "$1/.claude/c.json" && [ "$c" = "{\"n\":$i}" ] || exit 7
	mkdir "d$i" && rmdir "d$i" || exit 10
	cat "$1/.claude/settings.json" > /dev/null || exit 2
	stat "$1" > /dev/null || exit 3
	read up _ < /proc/uptime && echo "$up"
	sleep 0.05
done
echo "end $i"
`

// agentLoop is takeoverLoop running in one session, in a shell on the host or in a container.
type agentLoop struct {
	name, session string // session: its id
	stop          string // the file that stops it, on the host
	cmd           *exec.Cmd
	out, errs     *syncBuffer
	ended         chan struct{}
	err           error
}

func startAgentLoop(t *testing.T, name, session, stop string, cmd *exec.Cmd) *agentLoop {
	t.Helper()
	l := &agentLoop{name: name, session: session, stop: stop, cmd: cmd, out: &syncBuffer{}, errs: &syncBuffer{}, ended: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = l.out, l.errs
	require.NoError(t, cmd.Start())
	go func() { l.err = cmd.Wait(); close(l.ended) }()
	t.Cleanup(func() {
		_ = os.WriteFile(stop, nil, 0o644)
		select {
		case <-l.ended:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return l
}

// agentErrors is what the loops wrote to stderr, read when the message is made (a failed eventually's).
type agentErrors []*agentLoop

func (a agentErrors) String() string {
	var b strings.Builder
	for _, l := range a {
		fmt.Fprintf(&b, "%s: %q; ", l.name, l.errs.String())
	}
	return b.String()
}

// iterations is how many rounds the loop made so far.
func (l *agentLoop) iterations() int { return strings.Count(l.out.String(), "\n") }

// finish stops the loop and checks it saw no error and that every line it appended is in the store once and in
// order; it returns the times between two of its iterations, sorted.
func (l *agentLoop) finish(t *testing.T, store string) []time.Duration {
	t.Helper()
	require.NoError(t, os.WriteFile(l.stop, nil, 0o644))
	select {
	case <-l.ended:
		require.NoError(t, l.err, "%s saw an error: %s", l.name, l.errs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end: %s", l.name, l.errs.String())
	}
	assert.Empty(t, l.errs.String(), "%s saw no error", l.name)
	lines := strings.Split(strings.TrimSpace(l.out.String()), "\n")
	var n int
	_, err := fmt.Sscanf(lines[len(lines)-1], "end %d", &n)
	require.NoError(t, err, "%s's last line: %q", l.name, lines[len(lines)-1])
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "{\"n\":%d}\n", i)
	}
	for _, name := range []string{"t.jsonl", "held.jsonl"} {
		files, err := filepath.Glob(filepath.Join(store, "sessions", l.session, ".claude", "projects", "*", name))
		require.NoError(t, err)
		require.Len(t, files, 1, "one %s in the store", name)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		assert.Equal(t, want.String(), string(b), "%s: every line of %s in the store once and in order", l.name, name)
	}
	var gaps []time.Duration
	var last float64
	for _, line := range lines[:len(lines)-1] {
		at, err := strconv.ParseFloat(line, 64)
		require.NoError(t, err, "a time: %q", line)
		if last != 0 {
			gaps = append(gaps, time.Duration((at-last)*float64(time.Second)).Round(time.Millisecond))
		}
		last = at
	}
	slices.Sort(gaps)
	return gaps
}

// TestMountTakeoverKill (issue 42's Done-when, kill -9): four agents work at once, each appending a numbered line to
// its transcript and reading .claude/settings.json every 50 ms (takeoverLoop): a shell on a confined root mount
// (--takeover is the default), `sessionfs run --backend docker`, a plain `docker run -v <mount>/sessions/<id>:/session`,
// a container given a target the CSI plugin published (its node mount, which the plugin starts, is held too), and
// a container of a Docker volume of the mount's plugin (--docker-volumes: its stage is the mount's, laid by descriptor).
// kill -9 of each mount's serving daemon, 20 times in a row: no agent sees an error, every line is in the store
// once and in order, and the longest stall is under 1 s. The stalls' distribution and the nodes each takeover
// restored (what the kernel holds: bounded, as restored nodes are freed by its FORGETs) are logged.
func TestMountTakeoverKill(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	for _, id := range []string{"s1", "s2", "s3"} {
		ok(t, store, "new", id)
	}
	m := mount(t, store, "--docker-volumes="+volumeDriver) // a fifth agent: a container of a volume of its plugin
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })

	agents := startTakeoverAgents(t, m, store)
	const kills = 20
	for round := range kills {
		before := agents.counts()
		var killed []int
		for _, mnt := range agents.mounts {
			pid := servingPID(t, mnt)
			require.NotEqual(t, helper, pid, "the helper holds the connection, it does not serve it")
			require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			killed = append(killed, pid)
			if pid == daemon { // the test's child: reaped here (its output stays open in the helper, so not cmd.Wait)
				state, err := m.cmd.Process.Wait()
				require.NoError(t, err)
				m.cmd.ProcessState = state
			}
		}
		eventually(t, 20*time.Second, func() bool {
			for i, mnt := range agents.mounts {
				if next, err := inspect.ServingPID(mnt); err != nil || next == killed[i] {
					return false
				}
			}
			return agents.progressed(before, 3)
		}, "round %d: daemons take over from %v and the loops go on (%s mount: %s)", round, killed, agentErrors(agents.loops), m.log)
	}
	lines := regexp.MustCompile(`sessionfs: daemon \d+ took the connection over.*`).FindAllString(m.log.String(), -1)
	require.Len(t, lines, kills, "one takeover per kill: %s", m.log)
	t.Logf("the last takeover's line: %s", lines[kills-1])
	var restored []string
	for _, r := range takeoverRestores(m.log.String()) {
		restored = append(restored, strconv.Itoa(r.nodes()))
	}
	t.Logf("nodes the kernel held at each of %d takeovers (restored): %s", kills, strings.Join(restored, " "))
	r := cli(t, store, "doctor")
	assert.Regexp(t, fmt.Sprintf(`(?m)^OK\s+takeover\s+%s is held by its helper %d: .*; %d takeovers so far, the last at `, regexp.QuoteMeta(m.mnt), helper, kills), r.stdout)
	agents.finish(t, kills, fmt.Sprintf("%d kills", kills))
}

// waitGone waits up to d for process pid to end.
func waitGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if procGone(pid) {
			return true
		}
	}
	return procGone(pid)
}

// TestMountTakeoverOptOut: with --takeover=false the helper holds nothing, and a killed daemon leaves the mount
// stale, as before issue 42 (the path a mount whose helper is killed too takes: harness's kill).
func TestMountTakeoverOptOut(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store, "--takeover=false")
	helper := helperPID(t, m.cmd.Process.Pid)
	r := cli(t, store, "doctor")
	assert.Regexp(t, `(?m)^WARN\s+takeover\s+.*no helper holds its connection: a killed daemon leaves it stale`, r.stdout)
	require.NoError(t, m.cmd.Process.Kill())
	_ = m.cmd.Wait()
	eventually(t, 10*time.Second, func() bool { return procGone(helper) }, "the helper ends with its daemon")
	var st syscall.Statfs_t
	require.ErrorIs(t, syscall.Statfs(m.mnt, &st), syscall.ENOTCONN, "a killed daemon leaves a stale mount")
	assert.NotContains(t, m.log.String(), "takes the connection over")
}

// endTakeoverMount unmounts a --takeover mount and waits for its helper and the daemon it started to end with it.
func endTakeoverMount(t *testing.T, m *mounted, helper int) {
	if m.cmd.ProcessState == nil && procGone(m.cmd.Process.Pid) { // the first daemon died: reaped here, not by cmd.Wait
		if state, err := m.cmd.Process.Wait(); err == nil {
			m.cmd.ProcessState = state
		}
	}
	pids := []int{helper}
	if daemon, err := inspect.ServingPID(m.mnt); err == nil {
		pids = append(pids, daemon)
	}
	m.stop(t)
	for _, pid := range pids {
		gone := func() bool { return syscall.Kill(pid, 0) != nil }
		deadline := time.Now().Add(20 * time.Second)
		for !gone() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d (the helper %d, or the daemon it started) outlived its unmounted mount", pid, helper)
		}
	}
}

// helperOf is the privileged helper of the daemon pid (its child), or 0 when it has none (an unconfined mount).
func helperOf(pid int) int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(c)
			if err != nil {
				continue
			}
			if args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); strings.Contains(string(args), selfexec.Helper) {
				return child
			}
		}
	}
	return 0
}

// procGone says whether process pid ended (gone, or a zombie nobody reaped yet).
func procGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// TestAttackServingPIDIgnoresArgv (issue 42): a subverted daemon may write anything over its own command line; it
// writes its helper's (argv[1] its role, selfexec.Helper). doctor must still name it as the process serving the mount: the
// helper is told by a capability the confined daemon cannot take back, not by what a process says of itself.
// Here the test writes the daemon's argv through /proc/<pid>/mem, as the daemon could write its own memory.
func TestAttackServingPIDIgnoresArgv(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })

	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", daemon))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:])) // from field 3 on
	argStart, err := strconv.ParseUint(fields[48-3], 10, 64)
	require.NoError(t, err)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", daemon))
	require.NoError(t, err)
	argv := strings.Split(string(cmdline), "\x00")
	require.Greater(t, len(argv[1])+1+len(argv[2])+1, len(selfexec.Helper)+1, "room for the helper's argv[1]")
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", daemon), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = mem.WriteAt([]byte(selfexec.Helper+"\x00"), int64(argStart)+int64(len(argv[0])+1))
	mem.Close()
	require.NoError(t, err)
	cmdline, err = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", daemon))
	require.NoError(t, err)
	require.Equal(t, selfexec.Helper, strings.Split(string(cmdline), "\x00")[1], "the daemon says it is the helper")

	r := cli(t, store, "doctor")
	t.Logf("doctor: %s", regexp.MustCompile(`(?m)^\S+\s+confine\s.*$`).FindString(r.stdout))
	assert.Regexp(t, fmt.Sprintf(`(?m)^(OK|WARN)\s+confine\s+serving process %d of `, daemon), r.stdout, "doctor names the daemon, not a process by its word")
}

// TestMountTakeoverBounded (issue 42): where a takeover cannot hold, the mount's users get an error, never a hang.
// A test build's daemons taking the connection over stall (never serve, as one stopped would) or die before they
// serve (mount/run_takeover_fault_on.go); after kill -9 of the serving daemon, a reader of the mount must fail within
// the holder's bound (10 s) and some slack, the log says why, and the next mount serves the mountpoint again.
func TestMountTakeoverBounded(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	exe := faultBuild(t)

	for _, fault := range []string{"stall", "exit"} {
		t.Run(fault, func(t *testing.T) {
			t.Setenv("SESSIONFS_FAULT_TAKEOVER", fault) // the daemon started first ignores it
			store := t.TempDir()
			ok(t, store, "new", "s1")
			m := mountWith(t, exe, store)
			helper := helperPID(t, m.cmd.Process.Pid)
			reader := exec.Command("sh", "-c", `echo up; while cat "$1" > /dev/null; do sleep 0.05; done; exit 1`, "sh",
				filepath.Join(m.session("s1"), ".claude", "settings.json"))
			var stderr syncBuffer
			reader.Stderr = &stderr
			startUntil(t, reader, "up\n")
			ended := make(chan error, 1)
			go func() { ended <- reader.Wait() }()

			require.NoError(t, m.cmd.Process.Kill())
			killed := time.Now()
			state, err := m.cmd.Process.Wait() // not cmd.Wait: its output stays open in the helper
			require.NoError(t, err)
			m.cmd.ProcessState = state
			select {
			case err := <-ended:
				t.Logf("%s: the reader got an error %v after the kill: %q", fault, time.Since(killed).Round(time.Millisecond), stderr.String())
				require.Error(t, err)
			case <-time.After(takeover.TakeoverBound + 20*time.Second):
				_ = reader.Process.Kill()
				t.Fatalf("the reader still waits %v after the kill: %s", takeover.TakeoverBound+20*time.Second, m.log)
			}
			assert.Regexp(t, `not connected|connection abort`, stderr.String())
			want := map[string]string{"stall": "did not serve " + m.mnt + " within 10s", "exit": "3 daemons in a row died before they served"}[fault]
			eventually(t, 10*time.Second, func() bool { return strings.Contains(m.log.String(), want) }, "the log says why: %s", m.log)
			eventually(t, 10*time.Second, func() bool { return procGone(helper) }, "the helper ends with the connection")

			_ = m.cmd.Wait() // its output ended with the helper
			m.start(t)       // the next mount serves the mountpoint again
			_, err = os.Stat(filepath.Join(m.session("s1"), ".claude", "settings.json"))
			require.NoError(t, err)
		})
	}
}

// heldAPI is the API stub behind a gate: the next Messages request waits until the test lets it through, so that
// the test can kill the daemon while a turn is under way (its prompt written, its answer not yet).
type heldAPI struct {
	URL     string
	hold    atomic.Bool
	asked   chan struct{}
	release chan struct{}
}

func startHeldAPI(t *testing.T) *heldAPI {
	t.Helper()
	api := stub(t, "127.0.0.1:0")
	to, err := url.Parse(api.URL)
	require.NoError(t, err)
	h := &heldAPI{asked: make(chan struct{}, 1), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(to)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/messages") && h.hold.CompareAndSwap(true, false) {
			h.asked <- struct{}{}
			<-h.release
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// TestMountTakeoverClaudeConversation (issue 42's Done-when): a real Claude CLI conversation on a held mount goes on
// across kill -9 of the daemon: each of two turns (the second a --resume) has the daemon killed while the CLI waits
// for the API's answer, with its transcript open; both turns complete, and the store's transcript holds both. Both
// pinned CLIs: the old one and the newest.
func TestMountTakeoverClaudeConversation(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	forEachClaude(t, func(t *testing.T, c claudeCLI) { claudeAcrossKills(t, c.path) })
}

func claudeAcrossKills(t *testing.T, claude string) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mount(t, store)
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	api := startHeldAPI(t)

	turn := func(prompt string, args ...string) {
		t.Helper()
		cmd := exec.Command(claude, append([]string{"-p"}, append(args, prompt)...)...)
		cmd.Dir = filepath.Join(m.session("s1"), "workspace")
		cmd.Env = append(claudeEnv(t, api.URL), "CLAUDE_CONFIG_DIR="+filepath.Join(m.session("s1"), ".claude"))
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		api.hold.Store(true)
		require.NoError(t, cmd.Start())
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		select {
		case <-api.asked:
		case err := <-ended:
			t.Fatalf("claude ended before it asked the API: %v: %s", err, out.String())
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("claude did not ask the API: %s", out.String())
		}
		m.killServing(t)
		api.release <- struct{}{}
		select {
		case err := <-ended:
			require.NoError(t, err, "claude across the kill: %s", out.String())
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("claude did not end after the kill: %s", out.String())
		}
		assert.Contains(t, out.String(), apistub.Reply)
	}
	turn("turn one, the daemon killed meanwhile")
	canonical := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	files := transcripts(t, canonical)
	require.Len(t, files, 1, "one transcript in the store")
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	turn("turn two, resumed, the daemon killed again", "--resume", id)

	require.Equal(t, files, transcripts(t, canonical), "the same transcript")
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var users, replies int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &e), "a whole line: %q", line)
		switch {
		case e["type"] == "user" && (strings.Contains(line, "turn one") || strings.Contains(line, "turn two")):
			users++
		case e["type"] == "assistant" && strings.Contains(line, apistub.Reply):
			replies++
		}
	}
	assert.Equal(t, 2, users, "both prompts in the transcript")
	assert.Equal(t, 2, replies, "both answers in the transcript")
	assert.Equal(t, 2, strings.Count(m.log.String(), "took the connection over"), m.log.String())
}

// TestMountTakeoverFreesRestoredNodes (issue 42): what the kernel holds stays what the daemon holds across
// takeovers. Each of 20 rounds looks up 300 files, kills the daemon (the next restores them: the kernel holds
// them), then renames their folder away and back behind the mount, so that the kernel forgets them: the node log,
// which a daemon that took over keeps, forgets them too (restored nodes start with the kernel's lookup count, so
// its FORGETs bring them to zero), and the next takeover restores only what the kernel holds. Before, a restored
// node was never freed: every takeover restored the 300 again (305 restored after the kernel forgot them).
func TestMountTakeoverFreesRestoredNodes(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "s1")
	many := filepath.Join(store, "sessions", "s1", ".claude", "many")
	require.NoError(t, os.Mkdir(many, 0o755))
	const files = 300
	for i := range files {
		require.NoError(t, os.WriteFile(filepath.Join(many, fmt.Sprintf("f%d", i)), nil, 0o644))
	}
	m := mount(t, store)
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	var held, after []int
	for round := range 20 {
		entries, err := os.ReadDir(filepath.Join(m.session("s1"), ".claude", "many"))
		require.NoError(t, err)
		// Each file held open (O_PATH: no FUSE open) across the kill: an unused inode the kernel may drop when it
		// reclaims memory, and then it holds fewer than the files.
		var pinned []int
		for _, e := range entries {
			fd, err := unix.Open(filepath.Join(m.session("s1"), ".claude", "many", e.Name()), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			pinned = append(pinned, fd)
		}
		pid := m.serverPID(t)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		if pid == daemon {
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		eventually(t, 20*time.Second, func() bool { return strings.Count(m.log.String(), "took the connection over") == round+1 },
			"round %d: a daemon takes over: %s", round, m.log)
		all := takeoverRestores(m.log.String())
		n := all[len(all)-1].nodes()
		require.GreaterOrEqual(t, n, files, "round %d: the files the kernel holds restored", round)
		held = append(held, n)
		for _, fd := range pinned {
			unix.Close(fd)
		}

		require.NoError(t, os.Rename(many, many+"2"))
		require.NoError(t, os.Rename(many+"2", many))
		var st takeover.Held
		eventually(t, 20*time.Second, func() bool {
			st, err = takeover.HeldBy(m.mnt)
			return err == nil && st.Nodes < files/2
		}, "round %d: the kernel forgot the files: the node log forgets them too (%+v, %v)", round, st, err)
		after = append(after, st.Nodes)
	}
	t.Logf("nodes restored at each of 20 takeovers (the kernel holds the 300 files): %v", held)
	t.Logf("nodes the node log holds once the kernel forgot them, each round: %v", after)
	assert.LessOrEqual(t, held[len(held)-1], held[0]+5, "the nodes restored do not grow")
}

// TestMountTakeoverResentChanges (issue 42): a daemon killed after it made a change and before it answered (a test
// build dies there: mount/takeover/fault_on.go) leaves the request to the kernel, which resends it to the daemon
// that takes over; that one finds the change made and answers it as made, as the request was noted as its own: an
// O_EXCL create opens the file it made (not EEXIST), a mkdir, a rename and an unlink succeed. Each is one kill.
func TestMountTakeoverResentChanges(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	exe := faultBuild(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	m := mountWith(t, exe, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	dir := filepath.Join(m.session("s1"), ".claude")
	inStore := filepath.Join(store, "sessions", "s1", ".claude")
	takeovers := 0
	tookOver := func(what string) {
		t.Helper()
		if takeovers == 0 { // the test's child, dead: reaped here (its output stays open in the helper, so not cmd.Wait)
			state, err := m.cmd.Process.Wait()
			require.NoError(t, err)
			m.cmd.ProcessState = state
		}
		takeovers++
		eventually(t, 10*time.Second, func() bool { return strings.Count(m.log.String(), "took the connection over") == takeovers },
			"%s: the daemon died and one took over: %s", what, m.log)
	}

	f, err := os.OpenFile(filepath.Join(dir, ".sessionfs-die-after-create"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	require.NoError(t, err, "an O_EXCL create whose daemon died after it made the file: %s", m.log)
	_, err = f.WriteString("made once\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tookOver("create")
	b, err := os.ReadFile(filepath.Join(inStore, ".sessionfs-die-after-create"))
	require.NoError(t, err)
	assert.Equal(t, "made once\n", string(b))
	_, err = os.OpenFile(filepath.Join(dir, ".sessionfs-die-after-create"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	assert.ErrorIs(t, err, syscall.EEXIST, "a second create of it, not resent: the file is there")

	require.NoError(t, os.Mkdir(filepath.Join(dir, ".sessionfs-die-after-mkdir"), 0o755))
	tookOver("mkdir")
	assert.DirExists(t, filepath.Join(inStore, ".sessionfs-die-after-mkdir"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "from"), []byte("moved\n"), 0o600))
	require.NoError(t, os.Rename(filepath.Join(dir, "from"), filepath.Join(dir, ".sessionfs-die-after-rename")))
	tookOver("rename")
	assert.NoFileExists(t, filepath.Join(inStore, "from"))
	assert.FileExists(t, filepath.Join(inStore, ".sessionfs-die-after-rename"))

	require.NoError(t, os.Remove(filepath.Join(dir, ".sessionfs-die-after-rename")))
	tookOver("unlink")
	assert.NoFileExists(t, filepath.Join(inStore, ".sessionfs-die-after-rename"))
}

// TestDoctorSaysUserMountHeld: a normal user's mount has a holder too (mount/fusermount.go); doctor, run as that user,
// says it is held, by which holder, and the takeovers so far after a kill -9 of its daemon.
func TestDoctorSaysUserMountHeld(t *testing.T) {
	needUserMounts(t)
	u := newUserPlace(t)
	mnt, exe := u.mnt, u.binary(t)
	out, err := u.run(exe, "new", "s1")
	require.NoError(t, err, out)
	log := &syncBuffer{}
	daemon, pids := u.startMount(t, exe, log)
	holder := helperOf(daemon.Process.Pid)
	require.NotZero(t, holder, "the user's mount has a holder")
	*pids = append(*pids, holder)

	require.NoError(t, daemon.Process.Kill())
	state, err := daemon.Process.Wait()
	require.NoError(t, err)
	daemon.ProcessState = state
	eventually(t, 20*time.Second, func() bool { return strings.Contains(log.String(), "took the connection over") }, "a daemon takes over: %s", log)
	if pid, err := inspect.ServingPID(mnt); err == nil {
		*pids = append(*pids, pid)
	}
	out, _ = u.run(exe, "doctor")
	t.Logf("doctor: %s", regexp.MustCompile(`(?m)^\S+\s+takeover\s.*$`).FindString(out))
	assert.Regexp(t, fmt.Sprintf(`(?m)^OK\s+takeover\s+%s is held by its helper %d: .*; 1 takeover so far, the last at `, regexp.QuoteMeta(mnt), holder), out)

	// Upgrades count on: the holder hands its count to the binary it becomes (it began at none in each).
	for range 2 {
		out, err := u.run(exe, "mount", mnt)
		require.NoError(t, err, out)
		require.Contains(t, out, "is served by sessionfs")
	}
	if pid, err := inspect.ServingPID(mnt); err == nil {
		*pids = append(*pids, pid)
	}
	out, _ = u.run(exe, "doctor")
	t.Logf("doctor: %s", regexp.MustCompile(`(?m)^\S+\s+takeover\s.*$`).FindString(out))
	assert.Regexp(t, fmt.Sprintf(`(?m)^OK\s+takeover\s+%s is held by its helper %d: .*; 3 takeovers so far \(2 in upgrades\), the last at `, regexp.QuoteMeta(mnt), holder), out)
	assert.Contains(t, log.String(), "(takeover 3 of "+mnt+", an upgrade)")
}

// killConnection kills every process that holds the FUSE connection of the mount at mnt (its daemon and its
// holder), each stopped first so that none acts on the others' death.
func killConnection(t *testing.T, mnt string) {
	t.Helper()
	holders := connectionHolders(t, mnt)
	for _, pid := range holders {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range holders {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	for _, pid := range holders {
		waitGone(pid, 10*time.Second)
	}
}

// connectionHolders lists the processes holding a /dev/fuse descriptor of the mount at mnt's connection (its
// fdinfo's fuse_connection, the kernel's device number of the mount).
func connectionHolders(t *testing.T, mnt string) []int {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var dev uint64
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == mnt {
			var major, minor uint64
			_, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor)
			require.NoError(t, err)
			dev = major<<20 | minor
		}
	}
	require.NotZero(t, dev, "%s is in the mount table", mnt)
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var holders []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); link != "/dev/fuse" {
				continue
			}
			fdinfo, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
			if strings.Contains(string(fdinfo), fmt.Sprintf("fuse_connection:\t%d\n", dev)) && !slices.Contains(holders, pid) {
				holders = append(holders, pid)
			}
		}
	}
	return holders
}

// TestMountTakeoverAfterRenameBehindAHeldSession: a session renamed behind the mount while its old node was held,
// then a kill -9: the next daemon makes the new name's node again as the kernel knows it, so a listing of the
// sessions (READDIRPLUS: each entry's node and generation) leaves the folder a process holds usable. A node whose
// generation changed is marked bad by the kernel: every access through it would be EIO.
func TestMountTakeoverAfterRenameBehindAHeldSession(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount and its helper")
	store := t.TempDir()
	ok(t, store, "new", "a")
	fill(t, store, "a", "app")
	m := mount(t, store)
	daemon := m.cmd.Process.Pid
	helper := helperPID(t, daemon)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	heldOld, err := unix.Open(m.session("a"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(heldOld)
	ok(t, store, "rename", "a", "b")
	eventually(t, 5*time.Second, func() bool {
		_, err := os.ReadFile(filepath.Join(m.session("b"), "app", "f"))
		return err == nil
	}, "the renamed session's files show while its old node is held")
	held, err := unix.Open(m.session("b"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // as a container's /session
	require.NoError(t, err)
	defer unix.Close(held)

	m.killServing(t)
	out, err := exec.Command("ls", "-l", filepath.Join(m.mnt, "sessions")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), " b\n")
	fd, err := unix.Openat(held, "app/f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err, "the held folder of the renamed session after the takeover and a listing")
	buf := make([]byte, 16)
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	assert.Equal(t, "app", string(buf[:n]))
	fd, err = unix.Openat(held, "session.json", unix.O_RDONLY|unix.O_CLOEXEC, 0) // served by FUSE, not a bind
	require.NoError(t, err, "the held folder's session.json after the takeover and a listing")
	unix.Close(fd)
	got, err := os.ReadFile(filepath.Join(m.session("b"), "app", "f"))
	require.NoError(t, err)
	assert.Equal(t, "app", string(got))
}

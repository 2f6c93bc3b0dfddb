package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Attacks on the nodes a daemon taking a held mount over leaves for later (go-fuse's takeover_pending.go): each is
// restored when the kernel first names it, while the daemon serves every session.

// The test binary doubles as a session's process holding the deepest folder of a chain (SESSIONFS_E2E_DEEP).
func init() {
	if n := os.Getenv("SESSIONFS_E2E_DEEP"); n != "" {
		os.Exit(deepHolder(n))
	}
}

// deepHolder opens, in HELPER_DIR, the deepest folder of a chain of n (folderChain's d0, walked down from
// d<n-1>), says "held", and then for each line "xattr" says "started", reads an attribute of it (a request about
// its node: with every folder above it restored first, if left for later) and says "done <error>".
func deepHolder(arg string) int {
	n, err := strconv.Atoi(arg)
	fd := -1
	if err == nil {
		fd, err = unix.Open(filepath.Join(os.Getenv("HELPER_DIR"), fmt.Sprintf("d%d", n-1)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	for k := n - 2; err == nil && k >= 0; k-- {
		var next int
		next, err = unix.Openat(fd, fmt.Sprintf("d%d", k), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		fd = next
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println("started")
		_, err := unix.Fgetxattr(fd, "user.sessionfs-e2e", make([]byte, 64))
		fmt.Println("done", err)
	}
	return 0
}

// TestAttackRestoreLaterDeepChainOthersGoOn: uid 65534 on an --allow-other root mount makes a chain of 16,000
// folders in its session (each moved into one made after it) and holds the deepest open; another session's file
// is read after it (its nodes too are left for later by the takeover). After a kill -9 of the daemon, the attacker
// names the deepest folder: the daemon restores the 13,000 folders above it left for later, each by its store
// path (seconds, the attacker's request). Meanwhile the other session reads, writes and lists its files, many
// times, none waiting for the attacker's restore; the daemon is killed again in its midst and the next one takes
// over within the holder's bound; the attacker's request is resent and answered (not EIO), and once more after a
// third kill (the node log the lazy restores left is right: no node freed that the kernel holds).
func TestAttackRestoreLaterDeepChainOthersGoOn(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	const folders = 16000
	store := t.TempDir()
	attackerSessions(t, store, "a")
	ok(t, store, "new", "b")
	m := attackedHeldMount(t, store)
	exe := exeForOthers(t)
	ws := filepath.Join(m.session("a"), "workspace")
	chain := startAttacker(t, exe, "SESSIONFS_E2E_CHAIN="+strconv.Itoa(folders), "HELPER_DIR="+ws)
	require.Equal(t, "made", chain.line(t))
	deep := startAttacker(t, exe, "SESSIONFS_E2E_DEEP="+strconv.Itoa(folders), "HELPER_DIR="+ws)
	require.Equal(t, "held", deep.line(t))
	bFile := filepath.Join(m.session("b"), "workspace", "f")
	require.NoError(t, os.WriteFile(bFile, []byte("b's"), 0o644))

	killServing(t, m)()
	restores := takeoverRestores(m.log.String())
	require.Len(t, restores, 1)
	t.Logf("the takeover: %d nodes restored before serving, %d left for when used", restores[0].before, restores[0].later)
	require.Greater(t, restores[0].later, folders/2, "the chain is left for later")

	lines := make(chan string, 4)
	go func() {
		for deep.lines.Scan() {
			lines <- deep.lines.Text()
		}
		close(lines)
	}()
	_, err := fmt.Fprintln(deep.stdin, "xattr")
	require.NoError(t, err)
	require.Equal(t, "started", <-lines)
	started := time.Now()

	// The other session's work, again and again while the attacker's restore goes on.
	rounds := 0
	var done string
	otherWork := func() {
		b, err := os.ReadFile(bFile)
		require.NoError(t, err, "another session's file")
		require.Equal(t, "b's", string(b))
		n := filepath.Join(m.session("b"), "workspace", fmt.Sprintf("n%d", rounds))
		require.NoError(t, os.WriteFile(n, []byte("new"), 0o644), "another session's new file")
		ents, err := os.ReadDir(filepath.Dir(bFile))
		require.NoError(t, err, "another session's folder")
		require.Len(t, ents, rounds+2)
		rounds++
	}
	for done == "" && rounds < 20 {
		otherWork()
		select {
		case done = <-lines:
		default:
		}
	}
	t.Logf("another session's work: %d rounds (a read, a write and a listing each) while the attacker's restore went on", rounds)
	assert.Empty(t, done, "the attacker's restore ended before another session's work did 20 rounds: that work may have waited for it")

	select {
	case done = <-lines:
	default:
		done = ""
	}
	t.Logf("the second kill, %s after the attacker's request began (answered already: %q)", time.Since(started).Round(time.Millisecond), done)
	killServing(t, m)() // in the midst of the attacker's restore
	otherWork()
	if done == "" {
		select {
		case done = <-lines:
		case <-time.After(3 * time.Minute): // a hang, not a speed
			t.Fatal("the attacker's request about its deepest folder is not answered after the second takeover")
		}
	}
	t.Logf("the attacker's request about its deepest folder, across the second takeover: %s, %s after it began", done, time.Since(started).Round(time.Millisecond))
	assert.NotContains(t, done, "input/output error")
	assert.NotContains(t, done, "stale")

	killServing(t, m)()
	_, err = fmt.Fprintln(deep.stdin, "xattr")
	require.NoError(t, err)
	require.Equal(t, "started", <-lines)
	select {
	case done = <-lines:
	case <-time.After(3 * time.Minute):
		t.Fatal("the attacker's request about its deepest folder is not answered after the third takeover")
	}
	t.Logf("after the third takeover: %s; restores: %+v", done, takeoverRestores(m.log.String()))
	assert.NotContains(t, done, "input/output error")
	assert.NotContains(t, done, "stale")
	otherWork()
	assert.NotContains(t, m.log.String(), "the connection is ended")
}

// The test binary doubles as a session's process racing the restore of its files (SESSIONFS_E2E_LINKRACE).
func init() {
	if n := os.Getenv("SESSIONFS_E2E_LINKRACE"); n != "" {
		os.Exit(linkRace(n))
	}
}

// linkRace, in HELPER_DIR, makes the kernel hold p/f<i> for each of n pairs (p/f<i> and q/g<i>, hard links of
// one file the session made in the store), and a file it opened and unlinked (p/sentinel: its node's name is gone),
// says "held", and waits for a line: the daemon was killed and another took over, leaving the files for later.
// Then for each pair it opens p/f<i> (a request about its node: restored) and looks q/g<i> up (the same file: its
// node, if registered by then) at once, one or the other a little later each time, and for every other pair
// unlinks both names (the kernel forgets the node: one FORGET of every lookup it counted). It says "raced <n>
// <errors> <afterForgets' error>". On the next line (the kernel was made to prune its caches: it forgot the other
// pairs' nodes) it looks the other pairs' p/f<i> up again and says "looked up <how many> <afterForgets' error>".
func linkRace(arg string) int {
	pairs, err := strconv.Atoi(arg)
	if err == nil {
		err = os.Chdir(os.Getenv("HELPER_DIR"))
	}
	for i := 0; err == nil && i < pairs; i++ {
		_, err = os.Lstat(fmt.Sprintf("p/f%d", i))
	}
	var sentinel int
	if err == nil {
		sentinel, err = unix.Open("p/sentinel", unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	}
	if err == nil {
		err = unix.Unlink("p/sentinel")
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("held")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return 1
	}
	var failed []string
	for i := 0; i < pairs; i++ {
		// One of the two starts later by 0 to 32 steps of a spin, the lookup by up to 15 (each pair another).
		openLater, lookupLater := max(0, 32-i%48), max(0, i%48-32)
		var ready atomic.Int32
		var wg sync.WaitGroup
		var openErr, statErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			startTogether(&ready, openLater)
			fd, err := unix.Open(fmt.Sprintf("p/f%d", i), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			openErr = err
		}()
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			startTogether(&ready, lookupLater)
			var st unix.Stat_t
			statErr = unix.Lstat(fmt.Sprintf("q/g%d", i), &st)
		}()
		wg.Wait()
		errs := []error{openErr, statErr}
		if i%2 == 0 { // half the pairs unlinked: the kernel forgets their nodes now
			errs = append(errs, os.Remove(fmt.Sprintf("p/f%d", i)), os.Remove(fmt.Sprintf("q/g%d", i)))
		}
		for _, err := range errs {
			if err != nil && len(failed) < 5 {
				failed = append(failed, err.Error())
			}
		}
	}
	fmt.Printf("raced %d %q %v\n", pairs, failed, afterForgets(sentinel))

	// The other half's nodes the kernel forgets once the test made it prune its caches (memory pressure): their
	// names, looked up again, are answered.
	if _, err := in.ReadString('\n'); err != nil {
		return 1
	}
	sentinelErr := afterForgets(sentinel)
	next := make(chan int)
	var wg sync.WaitGroup
	var looked atomic.Int32
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var st unix.Stat_t
				if unix.Lstat(fmt.Sprintf("p/f%d", i), &st) == nil {
					looked.Add(1)
				}
			}
		}()
	}
	for i := 1; i < pairs; i += 2 {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Printf("looked up %d %v\n", looked.Load(), sentinelErr)
	return 0
}

// afterForgets returns once the daemon handled the FORGETs the kernel queued before: past some lookups (the
// kernel sends queued FORGETs before them), it reads an attribute of an unlinked file whose node the daemon
// cannot restore (the daemon logs "unknown node", after the FORGETs), and returns the error it got.
func afterForgets(sentinel int) error {
	for k := 0; k < 200; k++ {
		var st unix.Stat_t
		_ = unix.Lstat(fmt.Sprintf("q/none%d", k), &st)
	}
	_, err := unix.Fgetxattr(sentinel, "user.sessionfs-e2e", make([]byte, 64))
	return err
}

// spun is where startTogether's spins write, so that they are not optimised away.
var spun atomic.Int64

// startTogether returns once two callers with ready came (spinning, so that both go at once when both have a
// processor), later by steps of a short spin (a few hundred nanoseconds each).
func startTogether(ready *atomic.Int32, steps int) {
	ready.Add(1)
	for k := 0; ready.Load() < 2; k++ {
		if k%1024 == 1023 {
			runtime.Gosched() // the other has no processor yet
		}
	}
	var n int64
	for k := 0; k < steps*300; k++ {
		n += int64(k)
	}
	spun.Add(n)
}

// TestAttackRestoreLaterLinkRace: uid 65534 on an --allow-other root mount holds 10,000 files of its session, each
// with a hard link the kernel has not looked up, behind a chain of folders that uses up the takeover's eager
// restore; the daemon is killed. Each file is then left for later: the attacker opens it (its node is restored)
// and looks its hard link up at once. The lookup could find the node as the restore registered it and add the
// kernel's lookup, which the restore then overwrote with the recorded count: the kernel held one lookup more than
// the daemon counted (the node log too, for the next takeover), and its FORGET of them all underflowed the count:
// go-fuse panicked holding the node's lock. Before ac33b37: 24 to 94 such FORGETs for the 5,000 pairs unlinked;
// of the 5,000 the kernel forgot under memory pressure, lookups of the names waited for good (until the daemon was
// killed). Now none.
func TestAttackRestoreLaterLinkRace(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a confined mount, its holder, and an attacker of another uid")
	const (
		folders = 16000
		pairs   = 10000
	)
	store := t.TempDir()
	attackerSessions(t, store, "a")
	ws := filepath.Join(store, "sessions", "a", "workspace")
	for _, d := range []string{"p", "q"} {
		require.NoError(t, os.Mkdir(filepath.Join(ws, d), 0o755))
		require.NoError(t, os.Lchown(filepath.Join(ws, d), 65534, 65534))
	}
	for i := 0; i < pairs; i++ { // the session's own files, made in the store (a container with the plain store)
		f := filepath.Join(ws, "p", fmt.Sprintf("f%d", i))
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
		require.NoError(t, os.Lchown(f, 65534, 65534))
		require.NoError(t, os.Link(f, filepath.Join(ws, "q", fmt.Sprintf("g%d", i))))
	}
	m := attackedHeldMount(t, store)
	exe := exeForOthers(t)
	chain := startAttacker(t, exe, "SESSIONFS_E2E_CHAIN="+strconv.Itoa(folders), "HELPER_DIR="+filepath.Join(m.session("a"), "workspace"))
	require.Equal(t, "made", chain.line(t))
	a := startAttacker(t, exe, "SESSIONFS_E2E_LINKRACE="+strconv.Itoa(pairs), "HELPER_DIR="+filepath.Join(m.session("a"), "workspace"))
	require.Equal(t, "held", a.line(t))

	killServing(t, m)()
	restores := takeoverRestores(m.log.String())
	require.Len(t, restores, 1)
	t.Logf("the takeover: %d nodes restored before serving, %d left for when used", restores[0].before, restores[0].later)
	require.GreaterOrEqual(t, restores[0].later, pairs, "the attacker's files are left for later")

	unknown := strings.Count(m.log.String(), "unknown node")
	_, err := fmt.Fprintln(a.stdin, "go")
	require.NoError(t, err)
	raced := a.line(t)
	t.Logf("the attacker: %s", raced)
	require.True(t, strings.HasPrefix(raced, fmt.Sprintf("raced %d [] ", pairs)), raced)
	// The daemon logs the request about the unlinked file's node after the FORGETs the kernel sent before it.
	eventually(t, 30*time.Second, func() bool { return strings.Count(m.log.String(), "unknown node") > unknown },
		"the daemon logs no request about the unlinked file: %s", lastLines(m.log.String(), 5))
	underflows := strings.Count(m.log.String(), "lookupCount underflow")
	t.Logf("%d pairs raced (tries), %d unlinked: %d FORGETs of more lookups than the daemon counted", pairs, pairs/2, underflows)
	assert.Zero(t, underflows, "the kernel held more lookups of a restored node than the daemon counted: %s",
		regexp.MustCompile(`n\d+ lookupCount underflow[^\n]*`).FindString(m.log.String()))

	// Memory pressure makes the kernel prune its caches: the other half's nodes, unused, are forgotten (dropping
	// the caches stands in for it). Their names are then looked up again.
	require.NoError(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0o200))
	lines := make(chan string, 1)
	go func() {
		if a.lines.Scan() {
			lines <- a.lines.Text()
		}
	}()
	_, err = fmt.Fprintln(a.stdin, "lookup")
	require.NoError(t, err)
	select {
	case looked := <-lines:
		t.Logf("the attacker: %s", looked)
		assert.True(t, strings.HasPrefix(looked, fmt.Sprintf("looked up %d ", pairs/2)), looked)
	case <-time.After(30 * time.Second): // a hang, not a speed (the lookups take a second)
		t.Errorf("the attacker's lookups of its files wait for good once the kernel forgot their nodes")
		// A process whose request the daemon read waits for its answer even when killed: kill the daemon, and the
		// next one answers the requests the kernel resends.
		killServing(t, m)()
		select {
		case looked := <-lines:
			t.Logf("the attacker, once the daemon was killed and another took over: %s", looked)
		case <-time.After(30 * time.Second):
			t.Logf("the attacker waits still after another takeover: the connection is ended")
			abortConnection(t, m.mnt)
		}
	}
	t.Logf("FORGETs of more lookups than the daemon counted, in all: %d", strings.Count(m.log.String(), "lookupCount underflow"))
}

// abortConnection ends mnt's FUSE connection (its requests fail): the processes waiting on it can exit.
func abortConnection(t *testing.T, mnt string) {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(mnt, &st))
	require.NoError(t, os.WriteFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", unix.Minor(st.Dev)), []byte("1"), 0o200))
}

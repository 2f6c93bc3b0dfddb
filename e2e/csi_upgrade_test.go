package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/inspect"
)

// csiNode is one Kubernetes node's folders as the plugin's DaemonSet (contrib/kubernetes/node.yaml) shares them
// between its pods: the kubelet's folder and /var/lib/sessionfs with Bidirectional propagation (here: beneath a
// bind of base made rshared, which every pod's mount namespace copies as a peer), the plugin's socket folder,
// the mounts' control folder (each pod's /run/sessionfs, root's alone) and the store.
type csiNode struct {
	base, store, mnt, state, run, kubelet, sock string
}

func newCSINode(t *testing.T) *csiNode {
	t.Helper()
	base := t.TempDir()
	require.NoError(t, exec.Command("mount", "--bind", base, base).Run())
	require.NoError(t, exec.Command("mount", "--make-rshared", base).Run())
	n := &csiNode{base: base, store: filepath.Join(base, "store"), mnt: filepath.Join(base, "var-lib-sessionfs", "mnt"),
		state: filepath.Join(base, "var-lib-sessionfs", "csi"), run: filepath.Join(base, "run-sessionfs"),
		kubelet: filepath.Join(base, "kubelet"), sock: filepath.Join(base, "plugin", "csi.sock")}
	for _, d := range []string{n.store, n.mnt, filepath.Dir(n.sock)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Mkdir(n.run, 0o700))
	require.NoError(t, os.Mkdir(n.kubelet, 0o750))
	t.Cleanup(func() {
		for range 3 { // a mount beneath another's: detached in turn
			for _, e := range mountsUnder(t, base) {
				_ = syscall.Unmount(e.point, syscall.MNT_DETACH)
			}
		}
		_ = syscall.Unmount(base, syscall.MNT_DETACH)
	})
	return n
}

// csiPod is a plugin pod: `sessionfs csi` as pid 1 of its own pid namespace (its processes end with it, as a
// pod's do) and its own mount namespace, where the node's control folder is its /run/sessionfs.
type csiPod struct {
	name    string
	cmd     *exec.Cmd // unshare, which exits with the plugin's status
	plugin  int       // the plugin's pid as this test sees it
	pidNS   string
	log     *syncBuffer
	done    chan struct{}
	version string
}

// startCSIPod starts a plugin pod of exe on node n and waits for it to listen on the node's plugin socket (a new
// socket: the pod before may listen there still).
func startCSIPod(t *testing.T, n *csiNode, name, exe, version string) *csiPod {
	t.Helper()
	var before syscall.Stat_t
	_ = syscall.Stat(n.sock, &before)
	p := launchCSIPod(t, n, name, exe, version)
	eventually(t, 30*time.Second, func() bool {
		var st syscall.Stat_t
		if syscall.Stat(n.sock, &st) != nil || st.Ino == before.Ino {
			return false
		}
		c, err := net.Dial("unix", n.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "%s did not listen on the node's plugin socket: %s", name, p.log)
	return p
}

// launchCSIPod starts a plugin pod of exe on node n.
func launchCSIPod(t *testing.T, n *csiNode, name, exe, version string) *csiPod {
	t.Helper()
	script := `mkdir -p /run/sessionfs && mount --bind "$1" /run/sessionfs && shift && exec "$@"`
	p := &csiPod{name: name, log: &syncBuffer{}, done: make(chan struct{}), version: version}
	p.cmd = exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--propagation", "unchanged", "--",
		"sh", "-c", script, "sh", n.run, exe, "csi", "--endpoint", "unix://"+n.sock, "--node-id", "node-a",
		"--mountpoint", n.mnt, "--kubelet-root", n.kubelet, "--state-dir", n.state)
	// The wait by its variable, not its flag: a build before it (the test's proof that it fails there) runs too.
	p.cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+n.store, "CSI_SUCCESSOR_WAIT=20s")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	eventually(t, 10*time.Second, func() bool {
		select {
		case <-p.done: // a plugin that stopped at once
			return true
		default:
		}
		p.plugin = childOf(p.cmd.Process.Pid)
		return p.plugin != 0
	}, "%s: unshare started no plugin: %s", name, p.log)
	p.pidNS, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p.plugin))
	return p
}

// stop sends the plugin SIGTERM, as the kubelet does to a pod being deleted.
func (p *csiPod) stop() {
	if p.plugin > 0 {
		_ = syscall.Kill(p.plugin, syscall.SIGTERM)
	}
}

// exited waits for the pod to end and returns its exit code (-1: not within the bound).
func (p *csiPod) exited(within time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		return -1
	}
}

// kill ends the pod (SIGKILL of its pid 1 ends every process of its pid namespace).
func (p *csiPod) kill() {
	select {
	case <-p.done:
	default:
		if p.plugin > 0 {
			_ = syscall.Kill(p.plugin, syscall.SIGKILL)
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}
}

// inPidNS lists the processes of pid namespace ns (as /proc/<pid>/ns/pid names it).
func inPidNS(ns string) []int {
	var out []int
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && l == ns {
			out = append(out, pid)
		}
	}
	return out
}

// childOf is a child of pid (0: none yet).
func childOf(pid int) int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if c := strings.Fields(string(b)); len(c) > 0 {
			n, _ := strconv.Atoi(c[0])
			return n
		}
	}
	return 0
}

// TestCSIUpgrade (issue 42, the CSI plugin's DaemonSet update): the plugin's pod holds the node's mount (its
// helper keeps the FUSE connection), and a pod's processes end with its pid namespace. Two plugin pods, each
// `sessionfs csi` as pid 1 of its own pid and mount namespaces, share the node's folders as node.yaml's DaemonSet
// shares them; a container on a target the plugin published appends a numbered line and reads
// .claude/settings.json every 50 ms (takeoverLoop). 20 updates alternate two builds with different version
// strings: in even rounds as maxSurge 1 does (the new pod starts, then the old one gets SIGTERM), in odd rounds the
// other way (SIGTERM first: the old plugin waits for a successor). Each time the new pod's plugin takes the mount
// over, the daemon serving is the new build's, the old pod exits 0 with its pid namespace ended, and the
// container goes on: no error, every line once and in order, the longest stall under a second (the distribution
// logged). A pod of a build whose hand-over format differs is refused before anything stops, and the pod before
// serves on. What was published is the last plugin's to unpublish, with the session's lease. A plugin told to stop
// with no successor unmounts the node's mount once its wait ends.
func TestCSIUpgrade(t *testing.T) {
	needFUSE(t)
	need(t, os.Geteuid() == 0, "the CSI plugin mounts: root")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) makes the pods' namespaces")
	images(t, needDocker(t), "")
	dir := t.TempDir()
	versions := []string{"v0.0.0-csi.a", "v0.0.0-csi.b"}
	builds := []string{upgradeBuild(t, dir, versions[0]), upgradeBuild(t, dir, versions[1])}
	other := upgradeBuild(t, dir, "v0.0.0-csi.other", "-X github.com/sessionfs/sessionfs/mount/takeover.handoverFormat=test-other")

	n := newCSINode(t)
	pod := startCSIPod(t, n, "pod 0", builds[0], versions[0])
	conn, _ := (&csiPlugin{sock: n.sock}).client(t)
	target := filepath.Join(n.kubelet, "pods", "agent-0", "volumes", "session")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
	_, err = conn.NodePublishVolume(rpcCtx(t), publishReq("csi-1", target, map[string]string{"session": "s1"}))
	require.NoError(t, err, "publish: %s", pod.log)

	ctl := t.TempDir()
	name := fmt.Sprintf("sessionfs-csi-upgrade-%d", os.Getpid())
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	loops := []*agentLoop{startAgentLoop(t, "CSI pod", "s1", filepath.Join(ctl, "stop"),
		exec.Command("docker", "run", "--rm", "--name", name, "-v", target+":/session", "-v", ctl+":/ctl",
			busyboxImage, "sh", "-c", takeoverLoop, "sh", "/session", "/ctl/stop"))}
	loop := loops[0]
	eventually(t, 30*time.Second, func() bool { return loop.iterations() >= 5 }, "the loop runs: %s", agentErrors(loops))

	const updates = 20
	var took []time.Duration // each new plugin's take-over, as it logs it
	for round := range updates {
		next := (round + 1) % 2
		pod = updateCSIPod(t, n, pod, fmt.Sprintf("pod %d", round+1), builds[next], versions[next], round%2 == 0, func(old, pod *csiPod) {
			before := loop.iterations()
			eventually(t, 20*time.Second, func() bool { return loop.iterations() >= before+3 },
				"round %d: the container goes on after the update to %s (%s; old pod: %s; new pod: %s)", round, versions[next], agentErrors(loops), old.log, pod.log)
		})
		if m := regexp.MustCompile(`serves it \(in ([^)]+)\)`).FindStringSubmatch(pod.log.String()); m != nil {
			d, err := time.ParseDuration(m[1])
			require.NoError(t, err)
			took = append(took, d)
		}
	}
	slices.Sort(took)
	t.Logf("%d take-overs by the new plugin: median %v, max %v", len(took), took[len(took)/2], took[len(took)-1])

	// The last pod's holder is a holder as any: its daemon killed -9 is replaced, unseen by the container.
	killed, _, _ := servedBy(t, n.mnt)
	ran := loop.iterations()
	require.NoError(t, syscall.Kill(killed, syscall.SIGKILL))
	eventually(t, 20*time.Second, func() bool {
		next, err := inspect.ServingPID(n.mnt)
		return err == nil && next != killed && loop.iterations() >= ran+3
	}, "a daemon takes over from the killed one in the last pod (%s; pod: %s)", agentErrors(loops), pod.log)
	// The mount's count of takeovers goes on from pod to pod: one an update, then this one (it began again in
	// each pod).
	counted := fmt.Sprintf("(takeover %d of %s)", updates+1, n.mnt)
	eventually(t, 10*time.Second, func() bool { return strings.Contains(pod.log.String(), counted) }, "the last pod's holder logs %s: %s", counted, pod.log)

	// A build whose hand-over state differs is refused before anything stops, and its plugin stops before it
	// serves (a DaemonSet update halts, its new pod never ready): the pod before holds on and serves.
	serving, _, _ := servedBy(t, n.mnt)
	refused := launchCSIPod(t, n, "a pod of another hand-over format", other, "v0.0.0-csi.other")
	code := refused.exited(60 * time.Second)
	assert.NotEqual(t, 0, code, "the plugin that cannot take the mount over stops: %s", refused.log)
	assert.Contains(t, refused.log.String(), "does not read: it serves on", "the other format refused")
	before := loop.iterations()
	eventually(t, 20*time.Second, func() bool { return loop.iterations() >= before+3 }, "the container goes on: %s", agentErrors(loops))
	after, _, _ := servedBy(t, n.mnt)
	assert.Equal(t, serving, after, "the daemon serving before serves on")
	old := pod
	old.stop()
	eventually(t, 10*time.Second, func() bool { return strings.Contains(old.log.String(), "serves on if the next plugin takes it over") },
		"the plugin before waits for a successor: %s", old.log)
	pod = startCSIPod(t, n, "the last pod", builds[0], versions[0])
	require.Equal(t, 0, old.exited(30*time.Second), "%s exits 0: %s", old.name, old.log)
	require.Contains(t, pod.log.String(), "took the node's mount "+n.mnt+" over from the plugin before", "the last plugin took the mount over: %s", pod.log)

	// The lease went with the publication: the last plugin holds it (taken once the one before let it go).
	store, err := layout.OpenStore(n.store)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		l, err := store.TryLease("s1", layout.ThisProcess())
		if err == nil {
			_ = l.Release()
		}
		return errors.Is(err, layout.ErrRunning)
	}, "the last plugin holds session s1's lease: %s", pod.log)

	gaps := loop.finish(t, n.store)
	p := func(q float64) time.Duration { return gaps[min(len(gaps)-1, int(q*float64(len(gaps))))] }
	t.Logf("%s: %d iterations, %d updates: time between two iterations p50 %v, p90 %v, max %v (a 50 ms sleep each; the %d longest: %v)",
		loop.name, len(gaps)+1, updates, p(0.5), p(0.9), gaps[len(gaps)-1], updates, gaps[max(0, len(gaps)-updates):])
	assert.Less(t, gaps[len(gaps)-1], time.Second, "the longest stall")
	eventually(t, 30*time.Second, func() bool { return !containerRunning(name) }, "the container ended")

	// The last plugin unpublishes what the first published (the record went from pod to pod).
	conn, _ = (&csiPlugin{sock: n.sock}).client(t)
	_, err = conn.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-1", target))
	require.NoError(t, err, "unpublish by the last plugin: %s", pod.log)
	_, err = conn.NodePublishVolume(rpcCtx(t), publishReq("csi-2", target+"2", map[string]string{"session": "s1"}))
	if err == nil {
		_, _ = conn.NodeUnpublishVolume(rpcCtx(t), unpublishReq("csi-2", target+"2"))
	} else {
		assert.NotEqual(t, codes.FailedPrecondition, status.Code(err), "the lease was released at unpublish: %v", err)
	}

	// Told to stop with no successor, the last plugin waits, then unmounts the node's mount as before.
	pod.stop()
	require.Equal(t, 0, pod.exited(60*time.Second), "the last pod exits 0: %s", pod.log)
	assert.Contains(t, pod.log.String(), "no plugin took the node's mount")
	assert.False(t, isFUSEMount(n.mnt), "the node's mount is unmounted")
	_, err = inspect.ServingPID(n.mnt)
	assert.Error(t, err, "nothing serves the node's mount")
}

// updateCSIPod updates the node's plugin pod old to a pod of exe (version), as maxSurge 1 does (the new pod first,
// then SIGTERM to the old one) or, surge false, with the old one told to stop first (it waits for a successor);
// then, the old pod with its pid namespace and all that ran in it gone, goesOn checks what uses the mount. The new
// pod took the mount over, the daemon serving is its build's, and the old pod exited 0.
func updateCSIPod(t *testing.T, n *csiNode, old *csiPod, name, exe, version string, surge bool, goesOn func(old, pod *csiPod)) *csiPod {
	t.Helper()
	if !surge {
		old.stop()
		eventually(t, 10*time.Second, func() bool { return strings.Contains(old.log.String(), "serves on if the next plugin takes it over") },
			"%s: the plugin before waits for a successor: %s", name, old.log)
	}
	pod := startCSIPod(t, n, name, exe, version)
	if surge {
		old.stop()
	}
	code := old.exited(30 * time.Second)
	goesOn(old, pod)
	require.Equal(t, 0, code, "%s: the pod before exits 0 on SIGTERM: %s", name, old.log)
	assert.Empty(t, inPidNS(old.pidNS), "%s: the pod before's pid namespace ended", name)
	require.Contains(t, pod.log.String(), "took the node's mount "+n.mnt+" over from the plugin before (sessionfs "+old.version+")",
		"%s took the mount over: %s", name, pod.log)
	assert.Contains(t, old.log.String(), "the next plugin holds the node's mount", "%s: %s", name, old.log)
	_, _, served := servedBy(t, n.mnt)
	require.Equal(t, version, served, "%s: the daemon serving is the new build's", name)
	return pod
}

// TestCSIUpgradeKeepsLocks (issue 42): a POSIX lock held through a target the plugin published is held across two
// DaemonSet updates (new pod first, then old pod stopped first), and works as before after them
// (locksKeptAcross): the lock owners' descriptors go from the old pod's holder to the new one's.
func TestCSIUpgradeKeepsLocks(t *testing.T) {
	needFUSE(t)
	need(t, os.Geteuid() == 0, "the CSI plugin mounts: root")
	_, err := exec.LookPath("unshare")
	need(t, err == nil, "unshare (util-linux) makes the pods' namespaces")
	dir := t.TempDir()
	builds := []string{upgradeBuild(t, dir, "v0.0.0-csi-locks.a"), upgradeBuild(t, dir, "v0.0.0-csi-locks.b")}
	n := newCSINode(t)
	pod := startCSIPod(t, n, "pod 0", builds[0], "v0.0.0-csi-locks.a")
	conn, _ := (&csiPlugin{sock: n.sock}).client(t)
	target := filepath.Join(n.kubelet, "pods", "agent-0", "volumes", "session")
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
	_, err = conn.NodePublishVolume(rpcCtx(t), publishReq("csi-1", target, map[string]string{"session": "s1"}))
	require.NoError(t, err, "publish: %s", pod.log)

	served := func(*csiPod, *csiPod) {}
	l := startLocker(t, 0, filepath.Join(target, ".claude", "posix"))
	locksKeptAcross(t, l, filepath.Join(n.store, "sessions", "s1", ".claude", "posix"),
		func() { pod = updateCSIPod(t, n, pod, "pod 1", builds[1], "v0.0.0-csi-locks.b", true, served) },
		func() { pod = updateCSIPod(t, n, pod, "pod 2", builds[0], "v0.0.0-csi-locks.a", false, served) })
}

// containerRunning says whether the container name runs.
func containerRunning(name string) bool {
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", name).Output()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

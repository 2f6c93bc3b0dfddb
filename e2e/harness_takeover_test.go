package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/mount/inspect"
)

// takeoverAgents are issue 42's four agents at work at once, each running takeoverLoop (a numbered line appended
// to its transcript, .claude/settings.json read, every 50 ms): a shell on the mount m (session s1), and with
// Docker `sessionfs run --backend docker` (s2), a plain `docker run -v <mount>/sessions/s3:/session`, and a
// container given a target the CSI plugin published (s4, in a store of its own; the plugin's node mount, which it
// starts with the binary under test, is held too); and when m serves Docker volumes (mountVolumes' flag), a fifth:
// a container of a volume of m's plugin (`docker run --mount type=volume,volume-driver=...`, session
// takeover-<run>). TestMountTakeoverKill kills their daemons, TestMountUpgrade hands their mounts over.
type takeoverAgents struct {
	loops  []*agentLoop
	stores map[string]string // each loop's store, by its name
	mounts []string          // the mounts they use: m's, and with Docker the CSI plugin's node mount
	csi    *csiPlugin        // nil without Docker
	volume string            // the fifth agent's volume (a session of m's store), until removed
}

// removeVolume removes the fifth agent's volume (its loop ended), as the plugin serves still.
func (a *takeoverAgents) removeVolume(t *testing.T) {
	t.Helper()
	if a.volume == "" {
		return
	}
	if out, err := dockerCLI(t, "volume", "rm", "-f", a.volume); err != nil {
		t.Errorf("docker volume rm %s: %v: %s", a.volume, err, out)
	}
	a.volume = ""
}

// startTakeoverAgents starts the agents on m, whose store holds s1, s2 and s3, and waits for each to make 5
// rounds. Without Docker (or with SESSIONFS_TAKEOVER_NO_DOCKER set) only the shell runs.
func startTakeoverAgents(t *testing.T, m *mounted, store string) *takeoverAgents {
	t.Helper()
	ctl := t.TempDir()
	a := &takeoverAgents{stores: map[string]string{}, mounts: []string{m.mnt}}
	a.add(store, startAgentLoop(t, "the shell", "s1", filepath.Join(ctl, "stop-shell"),
		exec.Command("sh", "-c", takeoverLoop, "sh", m.session("s1"), filepath.Join(ctl, "stop-shell"))))
	if os.Getenv("SESSIONFS_TAKEOVER_NO_DOCKER") == "" {
		images(t, needDocker(t), "")
		run := exec.Command(bin, "run", "--backend", "docker", "--image", busyboxImage, "s2", "--",
			"sh", "-c", takeoverLoop, "sh", "/session", "/session/workspace/.stop")
		run.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		a.add(store, startAgentLoop(t, "sessionfs run", "s2", filepath.Join(store, "sessions", "s2", "workspace", ".stop"), run))

		name := fmt.Sprintf("sessionfs-takeover-%d", os.Getpid())
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name, name+"-csi").Run() })
		a.add(store, startAgentLoop(t, "docker run -v", "s3", filepath.Join(ctl, "stop"),
			exec.Command("docker", "run", "--rm", "--name", name, "-v", m.session("s3")+":/session", "-v", ctl+":/ctl",
				busyboxImage, "sh", "-c", takeoverLoop, "sh", "/session", "/ctl/stop")))

		if slices.Contains(m.cmd.Args, "--docker-volumes="+volumeDriver) {
			a.volume = "takeover-" + runTag
			// While the plugin serves (registered after the mount's cleanup), after the loop's: finish removes it
			// before a test ends its mount itself.
			t.Cleanup(func() { a.removeVolume(t) })
			a.add(store, startAgentLoop(t, "docker volume", a.volume, filepath.Join(ctl, "stop-vol"),
				exec.Command("docker", "run", "--rm", "--mount", "type=volume,volume-driver="+volumeDriver+",src="+a.volume+",dst=/session",
					"-v", ctl+":/ctl", busyboxImage, "sh", "-c", takeoverLoop, "sh", "/session", "/ctl/stop-vol")))
		}

		csiStore := t.TempDir()
		var csiHeld []int // the CSI mount's holder and the daemon serving last: they end with the plugin's mount
		t.Cleanup(func() {
			for _, pid := range csiHeld {
				if !waitGone(pid, 20*time.Second) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d of the CSI plugin's node mount outlived it", pid)
				}
			}
		})
		p := startCSI(t, csiStore, "node-a")
		unmountAllUnder(t, p.kubelet)
		node, _ := p.client(t)
		target := filepath.Join(p.kubelet, "pod-1", "volumes", "session")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o750))
		_, err := node.NodePublishVolume(rpcCtx(t), publishReq("csi-1", target, map[string]string{"session": "s4"}))
		require.NoError(t, err)
		t.Cleanup(func() {
			_, err := node.NodeUnpublishVolume(context.Background(), unpublishReq("csi-1", target))
			assert.NoError(t, err)
		})
		first := servingPID(t, p.mnt)
		csiHeld = append(csiHeld, helperOf(first))
		require.NotZero(t, csiHeld[0], "the CSI plugin's node mount has a helper that holds it")
		a.add(csiStore, startAgentLoop(t, "CSI pod", "s4", filepath.Join(ctl, "stop-csi"),
			exec.Command("docker", "run", "--rm", "--name", name+"-csi", "-v", target+":/session", "-v", ctl+":/ctl",
				busyboxImage, "sh", "-c", takeoverLoop, "sh", "/session", "/ctl/stop-csi")))
		a.mounts, a.csi = append(a.mounts, p.mnt), p
		t.Cleanup(func() {
			if pid, err := inspect.ServingPID(p.mnt); err == nil {
				csiHeld = append(csiHeld, pid)
			}
		})
	}
	eventually(t, 60*time.Second, func() bool { return a.progressed(make([]int, len(a.loops)), 5) }, "the loops run: %s", agentErrors(a.loops))
	return a
}

func (a *takeoverAgents) add(store string, l *agentLoop) {
	a.loops = append(a.loops, l)
	a.stores[l.name] = store
}

// counts are the rounds each loop made so far.
func (a *takeoverAgents) counts() []int {
	var n []int
	for _, l := range a.loops {
		n = append(n, l.iterations())
	}
	return n
}

// progressed says whether every loop made by rounds more than before (counts).
func (a *takeoverAgents) progressed(before []int, by int) bool {
	for i, l := range a.loops {
		if l.iterations() < before[i]+by {
			return false
		}
	}
	return true
}

// finish stops the loops, checks each saw no error and has every line in its store once and in order, logs the
// times between two of its rounds (what stopped it: events, e.g. "20 kills"; p50, p90, p99, max and the events
// longest ones) and asserts the longest is under a second.
func (a *takeoverAgents) finish(t *testing.T, events int, what string) {
	t.Helper()
	for _, l := range a.loops {
		gaps := l.finish(t, a.stores[l.name])
		p := func(q float64) time.Duration { return gaps[min(len(gaps)-1, int(q*float64(len(gaps))))] }
		t.Logf("%s: %d iterations, %s: time between two iterations p50 %v, p90 %v, p99 %v, max %v (a 50 ms sleep each; the %d longest: %v)",
			l.name, len(gaps)+1, what, p(0.5), p(0.9), p(0.99), gaps[len(gaps)-1], min(events, len(gaps)), gaps[max(0, len(gaps)-events):])
		assert.Less(t, gaps[len(gaps)-1], time.Second, "%s: the longest stall", l.name)
	}
	a.removeVolume(t)
}

// takeoverRestore is what a daemon that took a mount over did with the nodes the kernel held, as its holder logs it.
type takeoverRestore struct {
	before int // restored before it served
	later  int // left to restore when the kernel first names them
}

var restoredLine = regexp.MustCompile(`(\d+) nodes the kernel holds restored(?: \((\d+) more when used\))?`)

// takeoverRestores are the mount log's takeovers, in order.
func takeoverRestores(log string) []takeoverRestore {
	var out []takeoverRestore
	for _, m := range restoredLine.FindAllStringSubmatch(log, -1) {
		before, _ := strconv.Atoi(m[1])
		later, _ := strconv.Atoi(m[2])
		out = append(out, takeoverRestore{before, later})
	}
	return out
}

// nodes are the nodes the kernel held that the daemon restored, before it served or left for when used.
func (r takeoverRestore) nodes() int { return r.before + r.later }

// attackedHeldMount mounts store for an attacker of another uid: --allow-other and no binds (every access goes
// through the daemon), held by its helper (a killed daemon is replaced) and open to others. The mount and its
// helper end with the test.
func attackedHeldMount(t *testing.T, store string) *mounted {
	m := mount(t, store, "--allow-other", "--max-binds", "0")
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	openUp(t, m.mnt)
	return m
}

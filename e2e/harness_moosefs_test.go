package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// moosefs is a real MooseFS cluster on this machine (Debian's moosefs-master, -chunkserver and -client): a
// shared POSIX filesystem with global flock, metadata on a master, data on a chunkserver. Each client (mfsmount)
// stands for one host. MooseFS refuses loopback addresses, so the master and chunkserver live in a network
// namespace of the test's own, where 192.0.2.1 (a documentation address) sits on that namespace's loopback
// device: no traffic leaves the machine. Cleanup stops and unmounts everything, on failure too.
type moosefs struct {
	dir, netns string
}

// mooseAddr is the cluster's address inside its namespace; its ports are the defaults, free there.
const mooseAddr = "192.0.2.1"

var mooseCount atomic.Int32

func needMooseFS(t *testing.T) {
	t.Helper()
	needFUSE(t)
	need(t, os.Geteuid() == 0, "MooseFS cluster: needs root (a network namespace, FUSE mounts)")
	for _, b := range []string{"mfsmaster", "mfschunkserver", "mfsmount", "ip", "nsenter"} {
		_, err := exec.LookPath(b)
		need(t, err == nil, b+" not found (apt-get install moosefs-master moosefs-chunkserver moosefs-client iproute2)")
	}
	_, err := os.Stat("/var/lib/mfs/metadata.mfs.empty")
	need(t, err == nil, "MooseFS master: /var/lib/mfs/metadata.mfs.empty is missing (apt-get install moosefs-master)")
}

// startMooseFS starts a master and a chunkserver and waits until they serve.
func startMooseFS(t *testing.T) *moosefs {
	t.Helper()
	needMooseFS(t)
	c := &moosefs{dir: t.TempDir(), netns: fmt.Sprintf("sessionfs-e2e-%d-%d", os.Getpid(), mooseCount.Add(1))}
	mustRun(t, "ip", "netns", "add", c.netns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", c.netns).Run() })
	mustRun(t, "ip", "-n", c.netns, "link", "set", "lo", "up")
	mustRun(t, "ip", "-n", c.netns, "addr", "add", mooseAddr+"/32", "dev", "lo")

	for _, d := range []string{"master", "chunks", "hdd"} {
		require.NoError(t, os.Mkdir(filepath.Join(c.dir, d), 0o755))
	}
	empty, err := os.ReadFile("/var/lib/mfs/metadata.mfs.empty")
	require.NoError(t, err)
	c.write(t, "master/metadata.mfs", string(empty))
	c.write(t, "exports.cfg", mooseAddr+" / rw,alldirs,maproot=0\n")
	c.write(t, "topology.cfg", "")
	c.write(t, "hdd.cfg", filepath.Join(c.dir, "hdd")+"\n")
	c.write(t, "master.cfg", `WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = `+filepath.Join(c.dir, "master")+`
EXPORTS_FILENAME = `+filepath.Join(c.dir, "exports.cfg")+`
TOPOLOGY_FILENAME = `+filepath.Join(c.dir, "topology.cfg")+`
MATOML_LISTEN_HOST = `+mooseAddr+`
MATOCS_LISTEN_HOST = `+mooseAddr+`
MATOCL_LISTEN_HOST = `+mooseAddr+`
# A client gone without a word (its host died) loses its session, and its locks, after this (the least allowed).
SESSION_SUSTAIN_TIME = 60
`)
	c.write(t, "chunkserver.cfg", `WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = `+filepath.Join(c.dir, "chunks")+`
HDD_CONF_FILENAME = `+filepath.Join(c.dir, "hdd.cfg")+`
MASTER_HOST = `+mooseAddr+`
BIND_HOST = `+mooseAddr+`
CSSERV_LISTEN_HOST = `+mooseAddr+`
HDD_LEAVE_SPACE_DEFAULT = 128MiB
`)
	c.daemon(t, "master", "mfsmaster", "-c", filepath.Join(c.dir, "master.cfg"), "-f", "start")
	c.daemon(t, "chunkserver", "mfschunkserver", "-c", filepath.Join(c.dir, "chunkserver.cfg"), "-f", "start")
	log := filepath.Join(c.dir, "chunkserver.log")
	eventually(t, 30*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte("connected to Master"))
	}, "the MooseFS chunkserver never reached its master: %s", readTail(log))
	return c
}

func (c *moosefs) write(t *testing.T, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, name), []byte(text), 0o644))
}

// inNetns is argv run in the cluster's network namespace (nsenter execs it: the pid is argv's).
func (c *moosefs) inNetns(argv ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + c.netns}, argv...)...)
}

// daemon starts a MooseFS daemon in the foreground, logging to <name>.log; cleanup stops it (a master saves its
// metadata on SIGTERM, which takes a moment).
func (c *moosefs) daemon(t *testing.T, name string, argv ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(c.dir, name+".log"))
	require.NoError(t, err)
	cmd := c.inNetns(argv...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	t.Cleanup(func() { stopProcess(cmd, done, 30*time.Second) })
	return cmd
}

// stopProcess sends SIGTERM and waits, then SIGKILL.
func stopProcess(cmd *exec.Cmd, done chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// mooseClient is one host's MooseFS client: mfsmount in the foreground, mounted at mnt.
type mooseClient struct {
	mnt  string
	cmd  *exec.Cmd
	done chan struct{}
}

// mount starts a client (a host) on a new mountpoint and waits until it can write.
func (c *moosefs) mount(t *testing.T, name string) *mooseClient {
	t.Helper()
	mc := &mooseClient{mnt: filepath.Join(t.TempDir(), name), done: make(chan struct{})}
	require.NoError(t, os.Mkdir(mc.mnt, 0o755))
	log, err := os.Create(filepath.Join(c.dir, "client-"+name+".log"))
	require.NoError(t, err)
	mc.cmd = c.inNetns("mfsmount", "-f", "-H", mooseAddr, mc.mnt)
	mc.cmd.Stdout, mc.cmd.Stderr = log, log
	require.NoError(t, mc.cmd.Start())
	go func() { _ = mc.cmd.Wait(); log.Close(); close(mc.done) }()
	t.Cleanup(func() {
		if mountedAt(mc.mnt) {
			if syscall.Unmount(mc.mnt, 0) != nil {
				_ = syscall.Unmount(mc.mnt, syscall.MNT_DETACH)
			}
		}
		stopProcess(mc.cmd, mc.done, 10*time.Second)
	})
	probe := filepath.Join(mc.mnt, ".probe-"+name)
	eventually(t, 30*time.Second, func() bool {
		return mountedAt(mc.mnt) && os.WriteFile(probe, []byte("x"), 0o644) == nil
	}, "the MooseFS client %s never became writable: %s", name, readTail(log.Name()))
	require.NoError(t, os.Remove(probe))
	return mc
}

// kill ends the client with SIGKILL, as its host's death would: its mount is left dead.
func (mc *mooseClient) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, mc.cmd.Process.Kill())
	<-mc.done
}

// mountedAt reports whether something is mounted at p.
func mountedAt(p string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == p {
			return true
		}
	}
	return false
}

func mustRun(t *testing.T, argv ...string) {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	require.NoError(t, err, "%v: %s", argv, out)
}

func readTail(p string) string {
	b, _ := os.ReadFile(p)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// target is one way to reach the store: natively, through sessionfs, or through bindfs.
type target struct {
	name string
	root string // where the store's root is seen
	stop func()
	pid  int  // the FUSE daemon's pid, if any
	mnt  bool // a sessionfs mount (its transcripts are reached through a view)
}

// sessionDir is where a session is seen through the target.
func (t *target) sessionDir(id string) string { return filepath.Join(t.root, "sessions", id) }

// startSessionfs mounts store at mnt with the sessionfs binary (and its extra flags) and waits until it serves.
// It returns how long that took.
func startSessionfs(bin, store, mnt string, extra ...string) (*target, time.Duration, error) {
	return startSessionfsLog(bin, store, mnt, "", extra...)
}

// startSessionfsLog is startSessionfs with the daemon's output in the file logPath (kept in memory if "").
func startSessionfsLog(bin, store, mnt, logPath string, extra ...string) (*target, time.Duration, error) {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(bin, append([]string{"mount", mnt}, extra...)...)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close() // the daemon holds its own copy
		cmd.Stdout, cmd.Stderr = f, f
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
	for time.Since(start) < 30*time.Second {
		if served(mnt) {
			return &target{name: "sessionfs", root: mnt, stop: stop, pid: cmd.Process.Pid, mnt: true}, time.Since(start), nil
		}
		select {
		case <-exited:
			return nil, 0, fmt.Errorf("sessionfs mount exited: %s", log.String())
		case <-time.After(time.Millisecond):
		}
	}
	stop()
	return nil, 0, errors.New("sessionfs mount did not come up within 30s")
}

// boundSessions counts the sessions whose workspace is bound over the mount at mnt.
func boundSessions(mnt string) int {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], mnt+"/sessions/") && strings.HasSuffix(f[4], "/workspace") {
			n++
		}
	}
	return n
}

// waitBound waits until the session folder dir (on a mount) has its workspace bound: a session is bound a moment
// after its first lookup.
func waitBound(dir string, within time.Duration) bool {
	ws := filepath.Join(dir, "workspace")
	_, _ = os.Stat(ws)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == ws {
				return true
			}
		}
	}
	return false
}

// listBeforeBind opens the workspace of the session folder dir (on a mount) and lists it: the open is the
// session's first lookup, and the descriptor stays the FUSE folder's even once the bind lands over its name, so
// the listing is FUSE's. It reports whether the folder listed was FUSE's.
func listBeforeBind(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, "workspace"))
	if err != nil {
		return false, err
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return false, err
	}
	if _, err := f.ReadDir(-1); err != nil {
		return false, err
	}
	return st.Type == unix.FUSE_SUPER_MAGIC, nil
}

// served reports whether mnt is a FUSE mount that answers.
func served(mnt string) bool {
	var st, parent syscall.Stat_t
	var sfs syscall.Statfs_t
	if syscall.Statfs(mnt, &sfs) != nil || syscall.Stat(mnt, &st) != nil || syscall.Stat(filepath.Dir(mnt), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// startBindfs mounts store at mnt with bindfs, when installed.
func startBindfs(store, mnt string) (*target, error) {
	if _, err := exec.LookPath("bindfs"); err != nil {
		return nil, errors.New("bindfs is not installed (apt-get install bindfs)")
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command("bindfs", store, mnt).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bindfs: %v: %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !served(mnt) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return &target{name: "bindfs", root: mnt, stop: func() {
		if exec.Command("fusermount3", "-u", mnt).Run() != nil {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	}}, nil
}

// daemonRSS is the resident set of the mount's daemon: the process started and its children (as root, its
// privileged helper). field is "VmRSS:" (each process's whole resident set: the pages of the binary the two
// share count twice) or "Pss:" (shared pages divided among the processes that map them).
func daemonRSS(pid int, field string) int64 {
	var total int64
	for _, p := range append([]int{pid}, children(pid)...) {
		total += memBytes(p, field)
	}
	return total
}

// memBytes reads field (in kB) of process pid: VmRSS from its status, Pss from its smaps_rollup.
func memBytes(pid int, field string) int64 {
	file := "status"
	if field == "Pss:" {
		file = "smaps_rollup"
	}
	return procField(fmt.Sprintf("/proc/%d/%s", pid, file), field) << 10
}

// dropCaches empties the page, dentry and inode caches, so the next pass is cold. It needs root.
func dropCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
}

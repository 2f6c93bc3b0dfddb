//go:build !nobackends

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/client"
	"github.com/dustin/go-humanize"
	"github.com/moby/sys/mountinfo"
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/backends/docker"
	"github.com/sessionfs/sessionfs/backends/modal"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// check is one line of doctor's report.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // OK, WARN or FAIL
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "doctor",
		Short:   backendCommands["doctor"],
		Example: `  sessionfs doctor`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDoctor(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// runDoctor prints doctor's checks, and fails (exit code 1) when one did.
func (a *app) runDoctor(w io.Writer, asJSON bool) error {
	checks := a.diagnose()
	if asJSON {
		if err := printJSON(w, checks); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-4s %-10s %s", c.Status, c.Name, c.Detail)
			if c.Fix != "" {
				line += " (" + c.Fix + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, c := range checks {
		if c.Status == "FAIL" {
			return exitCode(1)
		}
	}
	return nil
}

// diagnose runs every check, in the order doctor prints them.
func (a *app) diagnose() []check {
	var out []check
	add := func(name, status, detail, fix string) { out = append(out, check{name, status, detail, fix}) }
	checkFUSE(add)
	a.checkStore(add)
	add(checkWatches())
	add(checkDocker())
	add(checkModal())
	add(checkClaude())
	return out
}

// checkFUSE reports whether /dev/fuse opens and fusermount3 is there for a normal user's mount.
func checkFUSE(add func(name, status, detail, fix string)) {
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		add("fuse", "FAIL", "/dev/fuse: "+err.Error(), "load the fuse module; in a container pass --device /dev/fuse")
	} else {
		f.Close()
		add("fuse", "OK", "/dev/fuse opens", "")
	}
	if p, err := exec.LookPath("fusermount3"); err == nil {
		add("fusermount", "OK", p, "")
	} else if os.Geteuid() == 0 {
		add("fusermount", "WARN", "fusermount3 not found (root mounts without it)", "apt-get install fuse3 for non-root users")
	} else {
		add("fusermount", "FAIL", "fusermount3 not found: a normal user cannot mount", "apt-get install fuse3")
	}
}

// checkStore reports the store: writable, its free space, whether other hosts may share it, and its mounts.
func (a *app) checkStore(add func(name, status, detail, fix string)) {
	s, err := a.openStore()
	if err != nil {
		add("store", "WARN", err.Error(), "")
		return
	}
	probe := filepath.Join(s.Root, ".doctor-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		add("store", "FAIL", s.Root+": not writable: "+err.Error(), "fix the store's permissions or mount")
	} else {
		os.Remove(probe)
		var st syscall.Statfs_t
		free := ""
		status := "OK"
		if syscall.Statfs(s.Root, &st) == nil {
			avail := st.Bavail * uint64(st.Bsize)
			free = ", " + humanize.IBytes(avail) + " free"
			if avail < 1<<30 {
				status = "WARN"
			}
		}
		ids, _ := s.IDs()
		add("store", status, fmt.Sprintf("%s writable, %s%s", s.Root, plural(len(ids), "session"), free), "")
	}
	if fstype, shared := mount.SharedStore(s.Root); shared {
		add("sharing", "OK", fmt.Sprintf("the store is on %s, which other hosts may mount: a mount caches names for %s, "+
			"exec, run and resume take a lease", fstype, mount.SharedTimeout), "")
	} else {
		add("sharing", "OK", "the store's filesystem is not one other hosts mount (if they do: mount --shared)", "")
	}
	checkMounts(s, add)
}

// checkDocker reports the engine answering the Docker API (Docker or Podman, rootless or not).
func checkDocker() (name, status, detail, fix string) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var engine string
		if sv, perr := cli.ServerVersion(ctx); perr == nil {
			engine = engineName(sv)
			// An engine that answered gets its own budget for /info, which Podman is slow to answer.
			ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
			if docker.Rootless(ictx, cli) {
				engine += ", rootless"
			}
			icancel()
		} else {
			err = perr
		}
		cancel()
		cli.Close()
		if err == nil {
			return "docker", "OK", engine + " at " + cli.DaemonHost(), ""
		}
	}
	return "docker", "WARN", "no Docker engine answers (" + oneLine(err.Error()) + ")", dockerFix(err)
}

// dockerFix is what to do when the engine does not answer: a socket this user may not open needs the docker group
// (or sudo), not a dockerd, which runs.
func dockerFix(err error) string {
	if strings.Contains(strings.ToLower(err.Error()), "permission denied") {
		return "add yourself to the docker group: sudo usermod -aG docker $USER, then log in again; or use sudo; for run --backend docker"
	}
	return "start dockerd or set DOCKER_HOST, for run --backend docker"
}

// checkClaude reports the claude CLI on PATH and its version.
func checkClaude() (name, status, detail, fix string) {
	p, err := exec.LookPath("claude")
	if err != nil {
		return "claude", "WARN", "the claude CLI is not on PATH", "npm install -g @anthropic-ai/claude-code"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	v, err := exec.CommandContext(ctx, p, "--version").Output()
	cancel()
	if err != nil {
		return "claude", "WARN", p + ": --version failed: " + err.Error(), ""
	}
	return "claude", "OK", p + " " + strings.TrimSpace(string(v)), ""
}

// checkModal asks Modal something harmless with the credentials found the Modal way: the answer proves the
// network, the credentials and the environment.
func checkModal() (name, status, detail, fix string) {
	if !modalConfigured() {
		return "modal", "OK", "not set up (no MODAL_TOKEN_ID, no ~/.modal.toml): only run --backend modal and sync need it", ""
	}
	c, err := modal.Connect()
	if errors.Is(err, modal.ErrNoCredentials) {
		return "modal", "WARN", "no Modal credentials", "modal token new, or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET"
	}
	if err == nil {
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err = c.Ping(ctx)
	}
	if err != nil {
		return "modal", "WARN", oneLine(err.Error()), "for run --backend modal and sync"
	}
	return "modal", "OK", "Modal at " + c.Config.ServerURL + " accepts the credentials", ""
}

// modalConfigured reports whether this user set Modal up, the ways Modal's clients read: MODAL_TOKEN_ID, or a
// config file (MODAL_CONFIG_PATH, else ~/.modal.toml). Without either, missing credentials are no warning.
func modalConfigured() bool {
	if os.Getenv("MODAL_TOKEN_ID") != "" {
		return true
	}
	path := os.Getenv("MODAL_CONFIG_PATH")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		path = filepath.Join(home, ".modal.toml")
	}
	_, err := os.Stat(path)
	return err == nil
}

// lowWatches is an inotify watch limit a large store can run out of: the mount takes one watch per folder the
// kernel holds.
const lowWatches = 65536

// checkWatches reports the inotify watch limit: the mount watches every folder the kernel holds, and past the limit
// changes made behind it show only when the kernel's cache times out.
func checkWatches() (name, status, detail, fix string) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	n, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil {
		return "watches", "WARN", "cannot read fs.inotify.max_user_watches", ""
	}
	detail = fmt.Sprintf("fs.inotify.max_user_watches %d: the mount watches each folder it shows, so changes made behind it "+
		"show at once (past the limit: within %s)", n, mount.DefaultTimeout)
	if n < lowWatches {
		return "watches", "WARN", detail, fmt.Sprintf("sysctl -w fs.inotify.max_user_watches=%d", 8*lowWatches)
	}
	return "watches", "OK", detail, ""
}

// checkMounts reports the store's mounts: live, or stale (left by a crashed daemon).
func checkMounts(s *layout.Store, add func(name, status, detail, fix string)) {
	mounts, _ := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) {
		return m.FSType != mount.FSType || m.Source != s.Root, false
	})
	if len(mounts) == 0 {
		add("mount", "WARN", "the store is not mounted: Claude Code before 2.1.234, Gemini and Qwen resume a conversation only from the cwd it began in", "sessionfs mount")
		return
	}
	for _, m := range mounts {
		if mount.Stale(m.Mountpoint) {
			add("mount", "FAIL", m.Mountpoint+" is stale (its daemon is gone)", "sessionfs unmount "+m.Mountpoint+", or mount again")
			continue
		}
		add("mount", "OK", m.Mountpoint+" serves the store", "")
		add(checkConfinement(m))
		add(checkTakeover(m))
		// Binds are the root daemon's: a normal user's mount serves everything through FUSE.
		if n := len(mount.Binds(m.Mountpoint)); n > 0 {
			add("binds", "OK", fmt.Sprintf("%s bound over %s (workspace, app and mcps at the disk's speed)", plural(n, "folder"), m.Mountpoint), "")
		} else if !strings.Contains(","+m.VFSOptions+",", ",user_id=0,") {
			add("binds", "WARN", "no session folder is bound over "+m.Mountpoint+": workspace, app and mcps go through FUSE "+
				"(its daemon is not root: metadata-heavy work such as untar, grep -r, du or rm -rf runs 2-10x slower than on the store)", "mount as root")
		} else {
			add("binds", "OK", "none yet over "+m.Mountpoint+" (a session is bound when first used)", "")
		}
	}
}

// checkConfinement reports what confines the process serving the mount m: its seccomp mode and capabilities
// (from /proc), and the kernel's Landlock. The process is the one the kernel shows holding the mount's FUSE
// connection, not one found by its command line (which any user can choose).
func checkConfinement(m *mountinfo.Info) (name, status, detail, fix string) {
	if !strings.Contains(","+m.VFSOptions+",", ",user_id=0,") {
		return "confine", "OK", "the mount at " + m.Mountpoint + " is a normal user's: its one process holds no privilege to confine", ""
	}
	pid, err := inspect.ServingPID(m.Mountpoint)
	if err != nil {
		return "confine", "WARN", "cannot tell which process serves the root mount at " + m.Mountpoint + ": " + err.Error(), ""
	}
	seccomp := "none"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				seccomp = map[string]string{"0": "none", "1": "strict", "2": "filter (an allow-list)"}[strings.TrimSpace(v)]
			}
		}
	}
	caps, err := confine.Held(pid)
	if err != nil {
		caps = "unknown (" + err.Error() + ")"
	}
	detail = fmt.Sprintf("serving process %d of %s: seccomp %s; capabilities %s", pid, m.Mountpoint, seccomp, strings.ToLower(caps))
	if seccomp == "none" {
		return "confine", "WARN", detail + ": served unconfined", "mount without --confine off"
	}
	if tty := terminalFDs(pid); tty != "" {
		return "confine", "WARN", detail + "; its " + tty + " a terminal, which a slip in its code could type into",
			"mount --daemon, or a foreground mount of this version (it serves from a copy whose output is relayed)"
	}
	if abi := confine.ABI(); abi > 0 {
		return "confine", "OK", detail + fmt.Sprintf("; Landlock ABI %d (the store only)", abi), ""
	}
	return "confine", "WARN", detail + "; the kernel lacks Landlock, so nothing but the daemon's own code keeps it to the store",
		"a kernel of 5.13 or later with landlock in its lsm= list"
}

// checkTakeover reports whether a root mount's connection is held by its helper, so that a daemon killed is
// replaced without its users seeing it (package mount/takeover), and how often that happened.
func checkTakeover(m *mountinfo.Info) (name, status, detail, fix string) {
	held, err := takeover.HeldBy(m.Mountpoint)
	if errors.Is(err, takeover.ErrNotHeld) {
		fix = "mount it again without --takeover=false"
		if strings.Contains(","+m.VFSOptions+",", ",user_id=0,") {
			fix += " and --confine off"
		}
		return "takeover", "WARN", m.Mountpoint + ": " + err.Error(), fix
	}
	if err != nil {
		return "takeover", "WARN", "cannot tell whether " + m.Mountpoint + " is held: " + err.Error(), ""
	}
	detail = fmt.Sprintf("%s is held by its helper %d: a killed daemon is replaced, its users wait and go on (%s the kernel holds)",
		m.Mountpoint, held.Holder, plural(held.Nodes, "node"))
	if held.Takeovers == 0 {
		return "takeover", "OK", detail + "; no takeover yet", ""
	}
	restored := plural(held.Restored, "node") + " restored"
	if held.Later > 0 {
		restored += fmt.Sprintf(", %d more when used", held.Later)
	}
	takeovers := plural(held.Takeovers, "takeover") + " so far"
	if held.Upgrades > 0 {
		takeovers += fmt.Sprintf(" (%d in upgrades)", held.Upgrades)
	}
	return "takeover", "OK", fmt.Sprintf("%s; %s, the last at %s (served %s after the daemon before ended, %s)",
		detail, takeovers, held.Last.Format(time.DateTime), held.Took, restored), ""
}

// terminalFDs names which of pid's descriptors 0-2 are a terminal ("fd 1 is", "fds 1, 2 are"; "" for none).
func terminalFDs(pid int) string {
	var fds []string
	for fd := 0; fd <= 2; fd++ {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		if err == nil && (strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty") || target == "/dev/console") {
			fds = append(fds, strconv.Itoa(fd))
		}
	}
	switch len(fds) {
	case 0:
		return ""
	case 1:
		return "fd " + fds[0] + " is"
	}
	return "fds " + strings.Join(fds, ", ") + " are"
}

// engineName names the engine that answers the Docker API: Podman serves it too ("Podman 4.3.1").
func engineName(sv types.Version) string {
	for _, c := range sv.Components {
		if strings.Contains(c.Name, "Podman") {
			return "Podman " + c.Version
		}
	}
	return "Docker " + sv.Version
}

// Package local runs a session's commands on this host, in the session's folder, with CLAUDE_CONFIG_DIR set.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/layout"
)

// nativeFolders reports whether spec runs on the mount with its heavy folders bound from the store (see
// nsexec.go), or else why not ("" when there is nothing to say: the session is the store folder itself).
func nativeFolders(spec backends.Spec) (bool, string) {
	if spec.Folder == nil {
		return false, ""
	}
	d, err := layout.OpenDir(spec.SessionDir)
	if err != nil {
		return false, ""
	}
	defer d.Close()
	if layout.SameFolder(d, spec.Folder) {
		return false, "" // not mounted: the command works on the store itself
	}
	return true, ""
}

var noted sync.Once

// noteOnce tells the user, once per process, why the command runs on the mount.
func noteOnce(why string) {
	noted.Do(func() { fmt.Fprintln(os.Stderr, "sessionfs: note: "+why) })
}

// Backend spawns processes directly.
type Backend struct{}

var _ backends.Backend = Backend{}

// Name is "local".
func (Backend) Name() string { return "local" }

// ForwardsSignals says Run relays the CLI's signals to the command itself (signals.go): the CLI must not cancel
// the run on them.
func (Backend) ForwardsSignals() bool { return true }

// Run starts spec.Argv in the session's workspace (or spec.Workdir) and waits for it. Signals sent to this process
// reach the command as a shell passes them (signals.go). When ctx is cancelled the process gets SIGTERM, then
// SIGKILL after a grace period.
func (Backend) Run(ctx context.Context, spec backends.Spec) (int, error) {
	if len(spec.Argv) == 0 {
		return -1, errors.New("no command to run")
	}
	p := layout.Derive(spec.SessionDir)
	dir := p.Workspace
	if spec.Workdir != "" {
		dir = filepath.Join(p.Root, spec.Workdir)
		if _, err := layout.ToContainer(p.Root, dir); err != nil {
			return -1, fmt.Errorf("-w %s: outside the session (give a folder inside it, e.g. workspace/api)", spec.Workdir)
		}
	}
	// Checked here: Go reports a missing cmd.Dir as the command not found, and the helper as a failed chdir.
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		what := "no such folder in the session"
		if err == nil {
			what = "not a folder"
		} else if !errors.Is(err, os.ErrNotExist) {
			what = err.Error()
		}
		return -1, fmt.Errorf("working directory %s: %s", dir, what)
	}
	cmd := exec.CommandContext(ctx, spec.Argv[0], spec.Argv[1:]...)
	if cmd.Err != nil {
		if errors.Is(cmd.Err, os.ErrPermission) {
			return 126, fmt.Errorf("run %s: %w", spec.Argv[0], cmd.Err)
		}
		return 127, fmt.Errorf("run %s: %w", spec.Argv[0], cmd.Err)
	}
	var landlock, tmpdir string // the environment pair that asks the helper for Landlock; the run's TMPDIR
	if spec.Landlock != nil {
		// /tmp is everyone's: the run gets a folder of its own there, removed after it.
		var err error
		if tmpdir, err = os.MkdirTemp("", "sessionfs-"+spec.SessionID+"-"); err != nil {
			return -1, err
		}
		defer os.RemoveAll(tmpdir)
		c := landlockFor(*spec.Landlock, spec, p.Root, tmpdir)
		landlock = confine.CommandEnv + "=" + c.Encode()
	}
	native, why := nativeFolders(spec)
	if !native && why != "" {
		noteOnce(why)
	}
	if native || landlock != "" {
		self, err := os.Executable()
		if err != nil {
			return -1, err
		}
		argv := append([]string{cmd.Path}, spec.Argv[1:]...)
		args := append([]string{self, selfexec.Landlock, "--"}, argv...) // on the store: a namespace for the sandbox alone
		if native {
			args = helperArgs(self, filepath.Dir(spec.Folder.Name()), spec.SessionID, spec.SessionDir, dir, argv)
		}
		cmd = exec.CommandContext(ctx, self, args[1:]...)
		cmd.SysProcAttr = nsAttr(landlock != "")
	}
	cmd.Dir = dir
	// PWD is the cwd as a shell would set it: a program that trusts it (opencode keys its conversations by it) must
	// not get the caller's.
	cmd.Env = spec.SessionEnv(os.Environ(), p.Root, "PWD="+dir)
	if landlock != "" {
		cmd.Env = append(cmd.Env, landlock)
	}
	if tmpdir != "" && !slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }) {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmpdir)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	var relay *terminalRelay
	if landlock != "" {
		var err error
		if relay, err = newTerminalRelay(&cmd.Stdin, &cmd.Stdout, &cmd.Stderr); err != nil {
			return helperExit, err
		}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err := runForwarding(cmd, relay)
	if err != nil && cmd.SysProcAttr != nil && cmd.ProcessState == nil {
		if landlock != "" {
			// The sandbox's promise rests on its namespaces (sandbox.go): refused, never run without them.
			return helperExit, fmt.Errorf("--landlock needs a mount and a PID namespace of its own (as a normal user, in a user namespace of its own), and none could be made here (%v): refusing to run without them; allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns), or in a container a seccomp profile that allows unshare and clone's namespace flags", err)
		}
		// The namespace could not be made (user namespaces disabled, say): run on the mount.
		noteOnce(fmt.Sprintf("no private mount namespace (%v): the session's folders are used through the mount, slower", err))
		plain := spec
		plain.Folder = nil
		return Backend{}.Run(ctx, plain)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil // as a shell reports it
		}
		return exit.ExitCode(), nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return 127, fmt.Errorf("run %s: %w", spec.Argv[0], err)
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.ENOEXEC):
		return 126, fmt.Errorf("run %s: %w", spec.Argv[0], err)
	}
	return -1, fmt.Errorf("run %s: %w", spec.Argv[0], err)
}

// landlockFor is what a run confined with Landlock may reach: what the user allowed (c), its session's folder and
// its TMPDIR to work in; and what no rule may cover or lie in: the store and the mount (but for the session) and
// $HOME. The command's own file is granted by the helper, which opens it (confine.ExecFromEnv).
func landlockFor(c confine.Command, spec backends.Spec, root, tmpdir string) confine.Command {
	c.RW = append(slices.Clone(c.RW), root, tmpdir)
	c.Session = []string{root}
	if spec.Folder != nil {
		inStore := spec.Folder.Name() // <store>/sessions/<id>
		c.Store = filepath.Dir(filepath.Dir(inStore))
		if filepath.Clean(inStore) != filepath.Clean(root) {
			c.Session = append(c.Session, inStore)
			c.Mount = filepath.Dir(filepath.Dir(root)) // <mnt>/sessions/<id>
		}
	}
	c.Home, _ = os.UserHomeDir()
	return c
}

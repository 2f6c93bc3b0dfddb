package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/mount/nodes"
	"github.com/sessionfs/sessionfs/mount/takeover"
)

// The holder of a mount tells which build it is (mount.Upgrade).
func init() { takeover.Version = versionString() }

// mountOptions are mount's flags.
type mountOptions struct {
	opts                            mount.Options
	cpuProfile, memProfile, logPath string
	maxNodes                        int64
	maxBinds                        int
	daemon, verbose                 bool
}

func (a *app) mountCmd() *cobra.Command {
	var o mountOptions
	cmd := &cobra.Command{
		Use:   "mount [MOUNTPOINT]",
		Short: "Serve the store as a filesystem (default ~/agent-sessions), in the foreground or with --daemon",
		Long: `mount shows the store at MOUNTPOINT as sessions/<id>/{app,workspace,mcps,.claude}. Under each session's
.claude/projects/, every folder name Claude Code can make from a cwd ([A-Za-z0-9-], up to 255 bytes) is a
view of the session's one transcript folder, so "claude --resume <uuid>" and "claude --continue" work from
any working directory. mkdir sessions/<id> creates a session. rm -rf sessions/<id> moves the whole session,
workspace included, to the trash at once, as "sessionfs rm ID" does: a session's listing starts with
session.json, and removing session.json through the mount removes the session (so does Node's fs.rm; find
-delete and Python's shutil.rmtree do too, but then report the names that vanished with it). "sessionfs trash
ls" lists removed sessions, "sessionfs trash restore ID" brings one back. rmdir of a session that still holds
anything is ENOTEMPTY; mv of a session is refused (EPERM: its id is in running containers' binds), "sessionfs
rename" renames one. Inside a session, removing a transcript moves it to the transcript trash; any other
file is deleted as on any filesystem.
It runs in the foreground until SIGINT/SIGTERM or "sessionfs unmount"; with --daemon it returns once the
mount serves, printing the daemon's pid, and the daemon logs to --log until "sessionfs unmount". It clears a
stale mount left by a crashed daemon first. A mountpoint inside the store, a store already mounted, or a
folder that is not empty is refused. On a mountpoint this store is served at already, with a holder of its
connection (the default: a root mount's helper, a normal user's small holder), mount hands the mount over to
this binary instead (an upgrade: the processes using it wait a moment and go on; the mount keeps its options;
one that comes during another hand-over waits for it), and refuses a build whose hand-over state differs while
the running one serves on. A daemon killed is replaced the same way, unseen (docs/reliability.md).
A store on a filesystem other hosts mount too (JuiceFS, CephFS, NFS, GlusterFS, MooseFS; or --shared) is
served with a 1s kernel cache instead of 1h: this host's watcher cannot see the other hosts' changes.
As root, the daemon confines itself before it serves (--confine): it keeps a few capabilities, Landlock
limits it to the store, and seccomp to the system calls it makes; a helper it starts first does the binds and
the unmount. At a terminal, it serves from a copy of itself that holds no terminal (which a slip in its code
could type into), and relays that copy's log and the signals it gets. "sessionfs doctor" shows the
confinement in force.`,
		Example: `  sessionfs mount                       # ~/agent-sessions
  sessionfs mount /mnt/sessions --allow-other   # containers running as other users
  sessionfs mount --daemon                      # in the background; prints the pid
  sessionfs unmount ~/agent-sessions`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			return a.runMount(cmd, args, o)
		},
	}
	cmd.Flags().BoolVar(&o.opts.AllowOther, "allow-other", false, "let other users (containers running as another uid) use the mount")
	cmd.Flags().BoolVar(&o.opts.ReadOnly, "read-only", false, "mount read-only")
	cmd.Flags().BoolVar(&o.opts.Debug, "debug", false, "log every FUSE request")
	cmd.Flags().DurationVar(&o.opts.Timeout, "cache-timeout", 0, fmt.Sprintf("how long the kernel caches names and attributes (default %s for the store's files while the watcher follows them, else %s; %s on a store shared with other hosts)", fmtDuration(mount.WatchedTimeout), mount.DefaultTimeout, mount.SharedTimeout))
	cmd.Flags().BoolVar(&o.opts.Shared, "shared", false, "the store is shared with other hosts (detected for JuiceFS, CephFS, NFS, GlusterFS, MooseFS, ...): bound the kernel's caches")
	cmd.Flags().Int64Var(&o.maxNodes, "max-nodes", nodes.DefaultMaxNodes, "files and folders the daemon keeps for the kernel; past it, the kernel is asked to forget those of idle sessions (0: never)")
	cmd.Flags().IntVar(&o.maxBinds, "max-binds", mount.DefaultMaxBinds, "as root, how many sessions have workspace (and app and mcps once they hold something) bound from the store over the mount at once (native speed); the least recently used idle ones are released past it (0: none)")
	cmd.Flags().StringVar(&o.opts.Confine.Mode, "confine", envOr("SESSIONFS_CONFINE", confine.On), "as root, how the process that serves FUSE requests is confined: on (a few capabilities, seccomp, and Landlock where the kernel has it), strict (on, and no Landlock is an error), off")
	cmd.Flags().StringVar(&o.opts.Confine.Seccomp, "seccomp", envOr("SESSIONFS_SECCOMP", confine.SeccompErrno), "what a system call outside the serving process's allow-list gets: errno (EPERM, logged by the kernel), kill (the process), log (allowed and logged: to measure the list)")
	cmd.Flags().BoolVarP(&o.daemon, "daemon", "d", false, "run in the background once the mount serves; print the daemon's pid")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "say how the mount serves: its confinement, which folders are binds, the cache of a shared store")
	cmd.Flags().StringVar(&o.logPath, "log", "", "with --daemon, where the daemon's output goes (appended; default: ~/.local/state/sessionfs/mount.log for the default store, mount-<folder>-<hash>.log beside it for another)")
	cmd.Flags().StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the daemon to this file (for performance work)")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	cmd.Flags().StringVar(&o.memProfile, "memprofile", "", "write a heap profile of the daemon to this file at unmount (for memory work)")
	_ = cmd.Flags().MarkHidden("memprofile")
	// On wherever a helper runs (a confined root mount): it serves no request, so it can hold the connection.
	cmd.Flags().BoolVar(&o.opts.Takeover, "takeover", true, "a holder keeps the mount's connection (a confined root mount's privileged helper; a normal user's mount starts a small one as that user), and a daemon killed is replaced by one that takes it over (its users wait, and go on); --takeover=false: a killed daemon leaves a stale mount")
	cmd.Flags().StringVar(&o.opts.DockerVolumes, "docker-volumes", "", "serve the sessions as Docker volumes of this driver name (alone: sessionfs): docker run --mount type=volume,volume-driver=sessionfs,src=ID,dst=/session (root; docs/docker.md)")
	cmd.Flags().Lookup("docker-volumes").NoOptDefVal = "sessionfs"
	return cmd
}

// check refuses bad flags before --daemon hands over, so the user sees the error, not the daemon's log.
func (o *mountOptions) check() error {
	if o.maxNodes < 0 {
		return usageError(fmt.Sprintf("--max-nodes %d: want a count of files and folders (0: never ask the kernel to forget)", o.maxNodes))
	}
	if o.maxBinds < 0 {
		return usageError(fmt.Sprintf("--max-binds %d: want a count of sessions (0: bind none, serve everything through FUSE)", o.maxBinds))
	}
	if err := o.opts.Confine.Check(); err != nil {
		return usageError(err.Error())
	}
	if o.opts.Timeout < 0 {
		return usageError(fmt.Sprintf("--cache-timeout %s: want a duration of 0 or more (0: the default)", o.opts.Timeout))
	}
	if name := o.opts.DockerVolumes; name != "" && layout.ValidateID(name) != nil {
		return usageError(fmt.Sprintf("--docker-volumes %q: want a driver name of letters, digits, '.', '_' and '-'", name))
	}
	return nil
}

// runMount serves the store at args[0] (default ~/agent-sessions): here, from a relayed copy that holds no
// terminal, or (--daemon) from a detached one.
func (a *app) runMount(cmd *cobra.Command, args []string, o mountOptions) error {
	mnt := defaultMountpoint()
	if len(args) == 1 {
		mnt = args[0]
	}
	// A machine that cannot mount is told so before anything is made (a new store, a daemon).
	if err := mount.CheckFUSE(); err != nil {
		return err
	}
	// A mount served with a holder is handed over to this binary (an upgrade), not refused as mounted already.
	if handed, err := a.upgradeMount(cmd.OutOrStdout(), cmd.ErrOrStderr(), mnt, o.daemon); handed || err != nil {
		return err
	}
	if o.daemon {
		// The store is made here, where the user reads "created a new store", not in the daemon's log.
		s, err := a.createStore()
		if err != nil {
			return err
		}
		return daemonize(cmd.OutOrStdout(), cmd.ErrOrStderr(), mnt, cmp.Or(o.logPath, defaultMountLog(s.Root)), o.opts.Confine)
	}
	// A confined root mount never serves from a process that can reach a terminal (relay.go).
	if os.Geteuid() == 0 && o.opts.Confine.Mode != confine.Off && os.Getenv(relayEnv) == "" && reachesTerminal() {
		return relayMount()
	}
	s, err := a.createStore()
	if err != nil {
		return err
	}
	return o.serve(s, mnt)
}

// serve mounts s at mnt and serves it until SIGINT, SIGTERM or "sessionfs unmount"; a daemon's log has the time
// on each line, and a last one when it ends.
func (o *mountOptions) serve(s *layout.Store, mnt string) error {
	stopLog := logDaemonWithTimes()
	defer stopLog()
	opts := o.opts
	if opts.MaxBinds = o.maxBinds; o.maxBinds == 0 {
		opts.MaxBinds = -1 // bind none
	}
	if opts.MaxNodes = o.maxNodes; o.maxNodes == 0 {
		opts.MaxNodes = -1 // never prune
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.memProfile != "" {
		defer writeMemProfile(o.memProfile)
	}
	// Signals are caught before mounting: one that arrives while mounting unmounts cleanly once the mount is up,
	// instead of killing the daemon mid-way with the mount left behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	watchRelay(func() {
		select {
		case sigs <- syscall.SIGTERM: // unmounted as on SIGTERM
		default: // a signal is on its way already
		}
	})
	// systemd is told once the mount is made, before the confinement takes the socket away: the kernel holds
	// requests until they are served.
	notify := func() {
		if err := mount.NotifyReady(); err != nil {
			warnf("tell systemd the mount is ready: %v", err)
		}
	}
	// The daemon's heap is held to 1.25 times what is live past a small floor (nodes.LimitMemory); a daemon that
	// takes a mount over holds its own (mount.RunTakeover).
	limited := make(chan struct{})
	defer close(limited)
	go nodes.LimitMemory(nodes.MemoryFloor, limited)
	m, err := mount.Start(s, mnt, opts, notify) // served confined as root, unless --confine off
	if err != nil {
		return err
	}
	go unmountOnSignal(m, sigs)
	printServing(s, m, opts, o.verbose)
	if err := tellReady(); err != nil {
		warnf("tell mount --daemon the mount is ready: %v", err)
	}
	err = m.Wait()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: the mount at %s ends on an error\n", m.Mountpoint) // main says which
	} else {
		fmt.Fprintf(os.Stderr, "sessionfs: unmounted %s; the mount ends\n", m.Mountpoint)
	}
	return err
}

// unmountOnSignal unmounts m at the first of sigs. Busy, it is detached then, served until its last user leaves;
// a second signal ends it at once.
func unmountOnSignal(m *mount.Mount, sigs <-chan os.Signal) {
	<-sigs
	if err := m.Unmount(); err == nil {
		return
	}
	users := "processes"
	if u := m.Users(); len(u) > 0 {
		users = strings.Join(u, ", ")
	}
	_ = m.Detach()
	fmt.Fprintf(os.Stderr, "sessionfs: %s is in use (%s): detached, and served until they leave; interrupt again to stop now (they then get errors)\n", m.Mountpoint, users)
	<-sigs
	fmt.Fprintln(os.Stderr, "sessionfs: stopping now")
	if err := m.Abort(); err != nil {
		warnf("%v", err)
		os.Exit(1)
	}
}

// nextSteps is what a user who just mounted the store at root does next (make run's mount says it): the commands
// name the store when neither the default nor $SESSIONFS_STORE does.
func nextSteps(root string) string {
	cli := "sessionfs"
	if def, err := layout.DefaultStoreRoot(); err == nil && def != root && os.Getenv(layout.EnvStore) == "" {
		if strings.ContainsAny(root, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			root = shellQuote(root)
		}
		cli += " --store " + root
	}
	steps := [][2]string{{cli + " new", "makes a session and prints its ID"},
		{cli + " exec ID -- claude", "runs Claude Code in it (" + cli + " ls lists the sessions)"}}
	var b strings.Builder
	b.WriteString("next, in another terminal:\n")
	for _, st := range steps {
		fmt.Fprintf(&b, "  %-*s   # %s\n", len(steps[1][0]), st[0], st[1])
	}
	b.WriteString("(sessionfs mount --verbose says how the mount serves; sessionfs doctor checks the set-up)\n")
	return b.String()
}

// printServing says on stderr what m serves and what to do next (not in a daemon's log); how it serves (its
// confinement, binds, a shared store's cache) with --verbose instead, as doctor says it.
func printServing(s *layout.Store, m *mount.Mount, opts mount.Options, verbose bool) {
	fmt.Fprintf(os.Stderr, "sessionfs: serving %s at %s (%s)\n", s.Root, m.Mountpoint, stopHint(m.Mountpoint))
	if !verbose {
		if os.Getenv(readyFdEnv) == "" { // not a daemon's log: someone reads this now
			fmt.Fprint(os.Stderr, nextSteps(s.Root))
		}
		return
	}
	if m.Confinement != "" {
		fmt.Fprintf(os.Stderr, "sessionfs: the serving process is confined: %s\n", m.Confinement)
	}
	switch {
	case m.Binding:
		fmt.Fprintf(os.Stderr, "sessionfs: sessions' %s are binds of the store's folders (native speed; app and mcps once they hold something), up to %s at once\n", strings.Join(mount.BoundDirs, ", "), plural(opts.MaxBinds, "session"))
	case os.Geteuid() != 0:
		fmt.Fprintln(os.Stderr, "sessionfs: not root: workspace, app and mcps are served through FUSE too (metadata-heavy work such as untar, grep -r, du or rm -rf runs 2-10x slower than on the store; sessionfs exec and run bind them natively all the same)")
	}
	if m.Shared != "" {
		fmt.Fprintf(os.Stderr, "sessionfs: the store is shared with other hosts (%s): their changes show here within %s (the kernel's cache) plus the filesystem's own cache\n", m.Shared, m.Timeout)
	}
}

// upgradeMount hands the mount at mnt to this binary when a holder keeps its connection (mount.Upgrade): handed
// false when none does, and the mount is made as usual. The mount keeps its options; its users wait a moment.
// With --daemon, stdout is the pid of the daemon that serves, as a mount --daemon prints it.
func (a *app) upgradeMount(stdout, w io.Writer, mnt string, daemon bool) (handed bool, err error) {
	s, err := a.openStore()
	if err != nil {
		return false, nil // no store: nothing serves it
	}
	res, err := takeover.Upgrade(s.Root, mnt, func() {
		fmt.Fprintf(w, "sessionfs: %s is being handed over (by another sessionfs mount): waiting for it to end, then handing it over to this build\n", mnt)
	})
	switch {
	case errors.Is(err, takeover.ErrNoHolder):
		return false, nil
	case err != nil:
		return false, err
	}
	fmt.Fprintf(w, "sessionfs: %s is served by sessionfs %s now (was %s; daemon %d): the mount keeps its options\n", mnt, res.To, res.From, res.Daemon)
	if daemon {
		fmt.Fprintln(stdout, res.Daemon)
	} else { // asked for a foreground mount (make run): it was handed over instead, and returns
		fmt.Fprintf(w, "sessionfs: it stays in the background, as it was, rather than in this terminal; %s stops it\n", unmountCommand(mnt))
	}
	return true, nil
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeMemProfile writes the heap profile to path, after a collection so that it shows what is live.
func writeMemProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		warnf("memory profile: %v", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		warnf("memory profile: %v", err)
	}
}

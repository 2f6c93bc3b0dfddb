package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
)

// landlockHelp is what --landlock does, for exec's and run's help.
const landlockHelp = `--landlock runs the command in a sandbox the kernel enforces, to root too (Linux 6.12+: Landlock ABI 6 and
seccomp, and a mount and a PID namespace of its own: a user namespace too for a normal user; refused, naming what
is missing, where any lacks). It may read and run the system's folders (/usr, /bin, /lib, /opt, /sys, and /proc,
which shows its own processes alone), read /etc as any user may (not its secrets: /etc/shadow, ssh's host keys)
and git's settings (~/.gitconfig, ~/.config/git), use /dev/null, a /dev/shm of its own (empty, noexec, a quarter
of the memory at most), a terminal of its own and the ptys it opens (/dev/pts is its own: the host's other
terminals are out of sight), work in its session's folder and in a TMPDIR of its own (removed after the run;
/tmp itself is refused), and read and run the file it was asked to run: that file, never its folder (an agent
whose entry point loads files beside it needs --allow-read of its folder); a script sees $0 as /dev/fd/N. The
user's home, other sessions, the store and the mount are refused. It holds no capability (as root either: exec
gives none back), cannot make device files nor open one outside /dev (a node planted in the session opens
nothing), signal a process outside its sandbox or reach its abstract sockets, make unix sockets (the Docker API,
D-Bus and ssh-agent are out of reach; pipes and stream socketpairs work), or push input into the terminal
(TIOCSTI). It runs in a session of its own and never holds your terminal: where its stdin, stdout or stderr is
one, it gets a pty of its own, which sessionfs relays to yours (raw for the run, as ssh -t and docker run -t);
Ctrl-C, Ctrl-Z and Ctrl-\ are keys for the command (a shell in it stops its own jobs), and no longer suspend
sessionfs; started in the background (&), sessionfs stops until brought to the foreground. Nothing it starts
outlives it: when the command ends, or sessionfs is killed, every process it left is killed. Set-uid
programs (sudo) gain nothing. The network is open. --allow PATH adds a folder (or file) to work in, --allow-read PATH one to read and run from; a path that
covers /, $HOME, the store or the mount is refused.`

// landlockOpts are --landlock, --allow and --allow-read.
type landlockOpts struct {
	on        bool
	rw, ro    []string
	allowFlag string         // the command's name, for messages
	cmd       *cobra.Command // for the --store it was given
}

func landlockFlags(cmd *cobra.Command, o *landlockOpts) {
	f := cmd.Flags()
	f.BoolVar(&o.on, "landlock", false, "confine the command with Landlock to its session, the system's folders and --allow's")
	f.StringArrayVar(&o.rw, "allow", nil, "with --landlock: a folder (or file) the command may also work in (repeatable)")
	f.StringArrayVar(&o.ro, "allow-read", nil, "with --landlock: a folder (or file) the command may also read and run from (repeatable)")
	o.allowFlag, o.cmd = cmd.Name(), cmd
}

// command is what the flags ask for (nil: no Landlock), checked: a missing path or a kernel without Landlock is
// refused before anything runs.
func (o *landlockOpts) command() (*confine.Command, error) {
	if !o.on {
		if len(o.rw) > 0 || len(o.ro) > 0 {
			return nil, usageError(o.allowFlag + ": --allow and --allow-read go with --landlock")
		}
		return nil, nil
	}
	if err := confine.Supported(); err != nil {
		return nil, usageError(o.allowFlag + ": --landlock: " + err.Error())
	}
	c := &confine.Command{RW: o.rw, RO: o.ro}
	// What no --allow may cover, checked here for a usage error before anything runs (the run checks again on
	// the folders it grants, with the session's own: backends/local).
	c.Home, _ = os.UserHomeDir()
	c.Store, c.Mount = o.storeAndMount()
	if err := c.Check(); err != nil {
		return nil, usageError(o.allowFlag + ": " + err.Error())
	}
	return c, nil
}

// storeAndMount are the store the command names (--store, else the default, as app.open takes it) and its mount
// ("" when not mounted or not found).
func (o *landlockOpts) storeAndMount() (store, mnt string) {
	if o.cmd != nil {
		if f := o.cmd.Flag("store"); f != nil {
			store = f.Value.String()
		}
	}
	if store == "" {
		store, _ = layout.DefaultStoreRoot()
	}
	if store == "" {
		return "", ""
	}
	store, _ = filepath.Abs(store)
	if _, err := os.Stat(store); err != nil {
		return "", "" // no store: the command fails on it next
	}
	if m, ok := mount.Find(store); ok {
		mnt = m.Mountpoint
	}
	return store, mnt
}

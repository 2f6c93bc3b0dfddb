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
const landlockHelp = `--landlock runs the command in a sandbox the kernel enforces, root included (Linux 6.12+; refused,
naming what is missing, elsewhere): it reads and runs the system's folders and the file it was asked to run,
works in its session's folder and a TMPDIR of its own, and cannot reach your home, other sessions, the store or
the mount, make unix sockets (the Docker API, ssh-agent), hold a capability or outlive its run. It gets a terminal
of its own, relayed to yours. The network is open. --allow PATH adds a folder (or file) to work in, --allow-read
PATH one to read and run from; a path that covers /, $HOME, the store or the mount is refused. In full:
docs/security.md, "Runs sandboxed on request".`

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

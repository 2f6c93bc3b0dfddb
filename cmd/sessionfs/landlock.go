package main

import (
	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/confine"
)

// landlockHelp is what --landlock does, for exec's and run's help.
const landlockHelp = `--landlock confines the command with Landlock (Linux 5.13+; refused on a kernel without it): it may read and
run the system's folders (/usr, /bin, /lib, /opt, /proc, /sys), read /etc as any user may (not its secrets:
/etc/shadow, ssh's host keys) and git's settings (~/.gitconfig, ~/.config/git), use /dev/null, the terminal and
/dev/shm, work in its session's folder, in a TMPDIR of its own (removed after the run; /tmp itself is refused)
and read what it was asked to run from, and nothing else: the user's home, other sessions, the store and the
mount's other sessions are refused by the kernel, to root too. --allow PATH adds a folder (or file) to work in,
--allow-read PATH one to read and run from. Set-uid programs (sudo) gain nothing under it.`

// landlockOpts are --landlock, --allow and --allow-read.
type landlockOpts struct {
	on        bool
	rw, ro    []string
	allowFlag string // the command's name, for messages
}

func landlockFlags(cmd *cobra.Command, o *landlockOpts) {
	f := cmd.Flags()
	f.BoolVar(&o.on, "landlock", false, "confine the command with Landlock to its session, the system's folders and --allow's")
	f.StringArrayVar(&o.rw, "allow", nil, "with --landlock: a folder (or file) the command may also work in (repeatable)")
	f.StringArrayVar(&o.ro, "allow-read", nil, "with --landlock: a folder (or file) the command may also read and run from (repeatable)")
	o.allowFlag = cmd.Name()
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
	if confine.ABI() < 1 {
		return nil, usageError(o.allowFlag + ": --landlock: " + confine.ErrNoLandlock.Error())
	}
	c := &confine.Command{RW: o.rw, RO: o.ro}
	if err := c.Check(); err != nil {
		return nil, usageError(o.allowFlag + ": " + err.Error())
	}
	return c, nil
}

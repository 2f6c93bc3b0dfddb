// Package confine is sessionfs's one place for the kernel's walls: what a process of sessionfs's, or a command
// it starts, may reach. Three callers, three sets of walls, each built from the same Landlock, seccomp and
// capability pieces (landlock.go, seccomp.go, caps.go):
//
//   - The daemon (Options, StartDaemon, Serving): the process that serves FUSE requests loses what it does not need, so that a
//     slip in its own code (a path resolved in the host's namespace instead of beneath the store's descriptor)
//     meets the kernel and not the host: the capabilities it keeps are listed in Keep, Landlock limits the files
//     it can open to the store, and seccomp limits its system calls to an allow-list (mount, unshare, setns, bpf,
//     module loading, ptrace, execve and socket among those refused). The privileged work that comes after
//     (binding sessions' folders, unmounting, aborting) is asked of a helper process, which serves no request
//     from the mount (mount/helper.go).
//   - A command the user runs sandboxed (Command, command*.go): exec --landlock and run --backend local
//     --landlock. The command reads and runs the system's folders and the file it was asked to run, works in its
//     session's folder and a TMPDIR of its own, holds no capability, makes no unix socket nor device, signals
//     nothing outside its sandbox and never takes a terminal over; the rest (the home, other sessions, the
//     store, the mount) is refused by the kernel, to root too. Most of this package is that sandbox.
//   - One thread of the daemon's (Beneath, thread.go): work that must touch only one folder (an agent's database
//     being updated) runs on a thread Landlock confines to it.
package confine

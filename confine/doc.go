// Package confine takes from the process that serves FUSE requests what it does not need, so that a slip in the
// daemon's own code (a path resolved in the host's namespace instead of beneath the store's descriptor) meets the
// kernel and not the host: the capabilities it keeps are listed in Keep, Landlock limits the files it can open to
// the store, and seccomp limits its system calls to an allow-list (mount, unshare, setns, bpf, module loading,
// ptrace, execve and socket among those refused).
//
// The privileged work that comes after (binding sessions' folders, unmounting, aborting) is asked of a helper
// process, which serves no request from the mount (mount/helper.go).
package confine

// Package bind is the one place a session's folder is mounted somewhere: every bind sessionfs makes (the mount's
// binder, a local run's namespace, the docker backend's staging, a CSI publish, a Docker volume's stage) is made
// here, and nowhere else (callers_test.go holds the tree to that). A session laid whole for something that follows
// paths as root (the kubelet, the engine) is LaySession (session.go): the mount's folder of the session with the
// store's folders bound over it.
//
// A session's processes may swap any name of their session for a symlink, a FIFO or another folder at any
// moment, and mount(2) follows a symlink in the last name of its target. So both ends of a bind are descriptors:
// the folder is opened beneath the session with no symlink and no mount crossed (OpenFolder), the place it lands
// is opened beneath a root the caller trusts the same way (OpenPlace), and the kernel's new mount API copies the
// folder as a detached tree (open_tree), sets its flags on that tree (nosuid, nodev, read-only when asked:
// mount_setattr), and attaches it by descriptor (move_mount). A bind is detached through its own descriptor
// (Mount.Detach) or, when a process inside must keep it (Mount.Release), through the folder holding it, opened the
// same way: no path a session or a FUSE daemon answers is ever walked by umount(2).
//
// The few other mounts a sandboxed run's namespace makes are here too: its mounts made nodev but /dev's
// (devices.go), a devpts instance of its own (terminals.go), and a /proc and a /dev/shm of its own
// (sandboxfs.go).
package bind

// Package mount mounts a sessionfs store as a FUSE filesystem and manages the mount's life: options, start-up,
// stale-mount recovery, signals, unmount, and keeping the kernel's caches true to the store.
package mount

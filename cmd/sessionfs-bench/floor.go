package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The floor is what any FUSE mount costs a path that crosses its folders to a bind, with no daemon work at all:
// a bare go-fuse file system of the folders on the way to a session's workspace (sessions/<id>/workspace, nothing
// else), mounted with the options of mount/options.go that bear on a path's walk (ACLs, so default_permissions;
// locks; nosuid, nodev, noatime), and a plain folder bound at its workspace as sessionfs
// binds the store's. A file row's sessionfs/plain at the floor's own ratio is the kernel's per-folder checks
// (fuse_permission, fuse_dentry_revalidate) and the bind's crossing, which no answer of a daemon removes; a ratio
// above the floor's is sessionfs's own.

// floorFolders is a bare tree of persistent folders along one path.
type floorFolders struct {
	gofs.Inode
	path []string
}

func (f *floorFolders) OnAdd(ctx context.Context) {
	p := &f.Inode
	for _, name := range f.path {
		c := p.NewPersistentInode(ctx, &gofs.Inode{}, gofs.StableAttr{Mode: syscall.S_IFDIR})
		p.AddChild(name, c, false)
		p = c
	}
}

// startFloor mounts the floor at mnt, served by this process, with the folder ws bound at its bench session's
// workspace. It needs root (the bind).
func startFloor(ws, mnt string) (*target, error) {
	for _, d := range []string{ws, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// An hour: longer than sessionfs's 30 s for these folders (mount.DefaultTimeout), so the floor never pays the
	// kernel's refresh of one (a GETATTR every 30 s, next to these rows' millions of checks).
	hour := time.Hour
	server, err := gofs.Mount(mnt, &floorFolders{path: []string{"sessions", benchSession, "workspace"}}, &gofs.Options{
		EntryTimeout: &hour, AttrTimeout: &hour, NegativeTimeout: &hour,
		MountOptions: fuse.MountOptions{Name: "sessionfs-floor", FsName: ws, MaxBackground: 64, EnableAcl: true,
			EnableLocks: true, DirectMountStrict: true, DirectMountFlags: syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOATIME},
	})
	if err != nil {
		return nil, err
	}
	t := &target{name: "floor", root: mnt}
	bound := filepath.Join(t.sessionDir(benchSession), "workspace")
	if err := syscall.Mount(ws, bound, "", syscall.MS_BIND, ""); err != nil {
		_ = server.Unmount()
		return nil, err
	}
	t.stop = func() {
		_ = syscall.Unmount(bound, syscall.MNT_DETACH)
		if server.Unmount() != nil {
			_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	}
	return t, nil
}

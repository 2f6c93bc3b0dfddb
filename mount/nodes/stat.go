package nodes

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// lstat reads a file's attributes and its birth time, which becomes the inode generation: an inode number the
// store reuses after a delete then names a new inode for the kernel, not the old one.
func lstat(path string, st *syscall.Stat_t) (gen uint64, err error) {
	return statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, st)
}

func fstat(fd int, st *syscall.Stat_t) (gen uint64, err error) {
	return statx(fd, "", unix.AT_EMPTY_PATH, st)
}

func statx(dirfd int, path string, flags int, st *syscall.Stat_t) (uint64, error) {
	var x unix.Statx_t
	if err := unix.Statx(dirfd, path, flags|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &x); err != nil {
		return 0, err
	}
	*st = syscall.Stat_t{
		Dev:     unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:     x.Ino,
		Nlink:   uint64(x.Nlink),
		Mode:    uint32(x.Mode),
		Uid:     x.Uid,
		Gid:     x.Gid,
		Rdev:    unix.Mkdev(x.Rdev_major, x.Rdev_minor),
		Size:    int64(x.Size),
		Blksize: int64(x.Blksize),
		Blocks:  int64(x.Blocks),
		Atim:    syscall.Timespec{Sec: x.Atime.Sec, Nsec: int64(x.Atime.Nsec)},
		Mtim:    syscall.Timespec{Sec: x.Mtime.Sec, Nsec: int64(x.Mtime.Nsec)},
		Ctim:    syscall.Timespec{Sec: x.Ctime.Sec, Nsec: int64(x.Ctime.Nsec)},
	}
	gen := uint64(1)
	if x.Mask&unix.STATX_BTIME != 0 && (x.Btime.Sec != 0 || x.Btime.Nsec != 0) {
		gen = uint64(x.Btime.Sec)*1e9 + uint64(x.Btime.Nsec)
	}
	return gen, nil
}

// stableAttr is the kernel's identity of a store file seen under alias view number alias (0: not in a view, or
// the canonical one). Files keep the store's inode number under every view, so all views share one inode (and one
// page cache), like hard links. Folders get the view number mixed into the high bits, because the kernel refuses
// a folder reachable under two names.
func stableAttr(st *syscall.Stat_t, gen, alias uint64) fs.StableAttr {
	ino := st.Ino
	if alias != 0 && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		ino ^= alias << aliasShift
	}
	return fs.StableAttr{Mode: st.Mode & syscall.S_IFMT, Ino: ino, Gen: gen}
}

// stableAttr is stableAttr with the file's filesystem mixed in: two filesystems (one mounted inside a workspace)
// hand out the same inode numbers for different files.
func (t *Tree) stableAttr(st *syscall.Stat_t, gen, alias uint64) fs.StableAttr {
	a := stableAttr(st, gen, alias)
	a.Ino ^= t.devNum(st.Dev) << devShift
	return a
}

// inoMix is what is mixed into the inode numbers of the entries of a folder on filesystem dev seen under view
// alias: into folders' and into every entry's.
func (t *Tree) inoMix(dev, alias uint64) (dirs, all uint64) {
	return alias << aliasShift, t.devNum(dev) << devShift
}

// devNum is 0 for the store's own filesystem and a small number for each other one met.
func (t *Tree) devNum(dev uint64) uint64 {
	if dev == t.dev {
		return 0
	}
	if n, ok := t.devs.Load(dev); ok {
		return n.(uint64)
	}
	n, _ := t.devs.LoadOrStore(dev, t.nextDev.Add(1)&0xff)
	return n.(uint64)
}

// aliasShift puts view numbers above the inode numbers real filesystems hand out (ext4's are 32-bit; xfs's stay
// far below 2^40 in practice); devShift puts filesystem numbers above the view numbers.
const (
	aliasShift = 40
	devShift   = 56
)

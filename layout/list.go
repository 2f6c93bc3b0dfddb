package layout

import (
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Info describes a session for listings. A session whose session.json is missing or malformed is still listed,
// with Damaged saying why, so one bad folder never hides the others.
type Info struct {
	Meta
	Dir          string    `json:"dir"`
	Size         int64     `json:"size"`                   // bytes on disk, symlinks not followed, other filesystems not counted
	LastActivity time.Time `json:"last_activity,omitzero"` // newest mtime in the session; absent when unknown
	Damaged      string    `json:"damaged,omitempty"`
}

// IDs lists the ids of the store's sessions, sorted. Names that are not valid ids (staging folders, stray files)
// and anything that is not a folder (a symlink among them) are skipped.
func (s *Store) IDs() ([]string, error) {
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	ents, err := sessions.ReadDir(".")
	if err != nil {
		return nil, wrap("list", "", s.SessionsDir(), err)
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() && ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// List describes every session, with size and last activity. Each appears once, under its folder's name.
func (s *Store) List() ([]Info, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.Describe(id))
	}
	return out, nil
}

// Describe gathers one session's Info. It never fails: problems are reported in Damaged. Its ID is id, the
// folder's name, whatever session.json says.
func (s *Store) Describe(id string) Info {
	info := Info{Dir: s.Dir(id)}
	info.ID = id
	d, err := s.OpenSession(id)
	if err != nil {
		info.Damaged = err.Error()
		return info
	}
	defer d.Close()
	if m, err := s.get(d, id); err != nil {
		info.Damaged = err.Error()
	} else {
		info.Meta = *m
	}
	info.Size, info.LastActivity = UsageIn(d)
	return info
}

// Usage walks a folder without following symlinks and returns the bytes it occupies on disk and the newest
// modification time in it. It stays on the folder's own mount: a filesystem mounted inside (a bind mount in a
// workspace, say) is not walked. Unreadable parts are skipped: this is for display and idle detection. dir
// itself may be reached through symlinks (it is the caller's); sessions use UsageIn.
func Usage(dir string) (size int64, last time.Time) {
	d, err := OpenDir(dir)
	if err != nil {
		return 0, time.Time{}
	}
	defer d.Close()
	return UsageIn(d)
}

// maxUsageDepth bounds the walk (and the descriptors it holds, one a level): deeper folders are not counted.
const maxUsageDepth = 256

// UsageIn is Usage of the open folder d. Everything is resolved one name at a time from its parent's
// descriptor, never following a symlink, so renames racing the walk cannot lead it out of d.
func UsageIn(d *Dir) (size int64, last time.Time) {
	var root unix.Statx_t
	if err := unix.Statx(d.Fd(), "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &root); err != nil {
		return 0, time.Time{}
	}
	u := usage{dev: devOf(&root), mnt: root.Mnt_id, useMnt: root.Mask&unix.STATX_MNT_ID != 0, euid: uint32(unix.Geteuid())}
	u.add(&root)
	fd, err := u.open(d.Fd(), ".", &root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return u.size, u.last
	}
	buf := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(buf)
	u.walk(fd, 0, *buf)
	return u.size, u.last
}

// direntBufs are walk's and Folders' getdents buffers: one per walk, shared by its levels (a level is done with the
// buffer's entries before it goes down a level), so a first ls of 10,000 sessions does not allocate one a folder,
// nor a search's catch-up one a session (a fresh 64 KiB each was 64 MiB to allocate at 1,000 sessions).
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

type usage struct {
	dev    uint64
	mnt    uint64
	useMnt bool
	euid   uint32
	atimed bool // O_NOATIME was refused once: this walk opens as anyone does from then on
	size   int64
	last   time.Time
}

// open opens folder name (of stat st) in dirfd to read it without updating its access time: the kernel would
// write back the inode of every folder a walk lists whose access time is older than its change (every one just
// copied or written in), journal and disk work for a listing. O_NOATIME is for the folder's owner and root; the
// kernel refuses it to a root without CAP_FOWNER (a confined daemon), which then opens as anyone does, for the
// rest of the walk (not two opens a folder).
func (u *usage) open(dirfd int, name string, st *unix.Statx_t, flags int) (int, error) {
	if !u.atimed && (st.Uid == u.euid || u.euid == 0) {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOATIME, 0)
		if err != unix.EPERM {
			return fd, err
		}
		u.atimed = true
	}
	return unix.Openat(dirfd, name, flags, 0)
}

func devOf(st *unix.Statx_t) uint64 { return unix.Mkdev(st.Dev_major, st.Dev_minor) }

func (u *usage) add(st *unix.Statx_t) {
	u.size += int64(st.Blocks) * 512 // what du counts: allocated blocks, so sparse files are not overstated
	if mt := time.Unix(st.Mtime.Sec, int64(st.Mtime.Nsec)); mt.After(u.last) {
		u.last = mt
	}
}

// sameMount: a folder on another filesystem, or another mount of this one, is not ours to walk.
func (u *usage) sameMount(st *unix.Statx_t) bool {
	return devOf(st) == u.dev && (!u.useMnt || st.Mask&unix.STATX_MNT_ID == 0 || st.Mnt_id == u.mnt)
}

// walk adds what the folder open as fd holds, and closes fd. It reads the folder with getdents itself, into
// buf: an os.File would try to register the descriptor with the poller and read once more past the end, which
// is most of the syscalls of a session's walk.
func (u *usage) walk(fd int, depth int, buf []byte) {
	defer unix.Close(fd)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			var st unix.Statx_t
			if unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &st) != nil {
				continue
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				u.add(&st)
				continue
			}
			if !u.sameMount(&st) {
				continue
			}
			u.add(&st)
			if depth >= maxUsageDepth {
				continue
			}
			sub, err := u.open(fd, name, &st, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
			if err != nil {
				continue
			}
			// The name may have been swapped for another folder (on another mount) since statx: check again.
			var again unix.Statx_t
			if unix.Statx(sub, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &again) != nil || !u.sameMount(&again) {
				unix.Close(sub)
				continue
			}
			u.walk(sub, depth+1, buf)
		}
	}
}

package mount

import (
	"iter"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
)

// The binder keeps at most max sessions bound (Options.MaxBinds): past it, it releases the least recently used
// sessions' binds that no process is inside. A walk of more sessions than that (du, find, grep -r across the
// mount) would push out one session for the next all the way: a bind and an unmount per session, for nothing the
// walk gains (it reads metadata, which FUSE serves from the kernel's cache), and the sessions people work in
// pushed out by its tail. So the binder pushes out at most churnRate sessions a second (churnBurst at once); a
// session wanted past that is served through FUSE, and bound when next wanted with a token to spare. A person
// opening one session still gets it bound at once.

// churnRate and churnBurst bound how many bound sessions the binder pushes out to bind others.
const (
	churnRate  = 16 // a second
	churnBurst = 16
)

// churn is a token bucket of the sessions the binder may push out. b.mu guards it.
type churn struct {
	tokens float64
	at     time.Time
}

// roomFor reports whether session id may be bound now: it is bound already (its binds are checked), there is
// room, or a token lets it push out another.
func (b *binder) roomFor(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bound[id] != nil || b.views[id] != nil || b.boundCount() < b.max {
		return true
	}
	c := &b.churn
	now := time.Now()
	if c.at.IsZero() {
		c.tokens = churnBurst
	} else {
		c.tokens = min(churnBurst, c.tokens+now.Sub(c.at).Seconds()*churnRate)
	}
	c.at = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// limit releases the binds of the least recently used sessions but keep (the one just bound) while more than max
// are bound. A bind in use (a process's folder or open file is inside) stays: it is tried with a plain unmount,
// which the kernel refuses with EBUSY then.
func (b *binder) limit(keep string) {
	b.mu.Lock()
	over := b.boundCount() - b.max
	ids := make([]string, 0, b.boundCount())
	for id := range b.boundIDs() {
		if id != keep {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	if over <= 0 {
		return
	}
	used := b.lastUsed(ids)
	sort.Slice(ids, func(i, j int) bool { return used[ids[i]] < used[ids[j]] })
	for _, id := range ids {
		if over == 0 {
			return
		}
		if b.release(id) {
			over--
		}
	}
}

// limitLater releases what is still past the limit (sessions that were in use when their turn came), and while
// some stay in use, tries again a little later: the limit holds once they are idle, not only at the next bind.
func (b *binder) limitLater() {
	if b.count() <= b.max {
		return
	}
	b.limit(b.newest()) // the session someone asked for last stays, as when it was bound
	if b.count() > b.max {
		time.AfterFunc(limitRetry, func() {
			select {
			case b.wake <- struct{}{}:
			default:
			}
		})
	}
}

// newest is the bound session used last.
func (b *binder) newest() string {
	b.mu.Lock()
	ids := make([]string, 0, b.boundCount())
	for id := range b.boundIDs() {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	used := b.lastUsed(ids)
	newest, at := "", int64(-1)
	for _, id := range ids {
		if t := used[id]; t > at {
			newest, at = id, t
		}
	}
	return newest
}

// limitRetry is how soon sessions kept past the limit because they were in use are tried again.
const limitRetry = time.Second

// release removes session id's binds unless one is in use; it reports whether they are gone. A plain unmount
// waits on nothing here but the kernel's answer, yet it walks the mount's folder (through its descriptor, no
// symlink), whose lookups the serving daemon answers: so it holds no lock meanwhile. The session's binds are taken
// out of the table first, and what stays is put back.
func (b *binder) release(id string) bool {
	if !b.releaseView(id) {
		return false
	}
	b.mu.Lock()
	binds := b.bound[id]
	delete(b.bound, id)
	removals := b.removals[id]
	b.mu.Unlock()
	kept := map[string]*bound{}
	if root, err := unix.Open(b.mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		parent, err := bind.OpenPlace(root, "sessions/"+id)
		unix.Close(root)
		for dir, cur := range binds {
			if err != nil {
				cur.Close() // the session's folder is gone from the mount: the kernel detached its binds
				continue
			}
			if gone, _ := cur.Release(parent, dir); !gone {
				kept[dir] = cur
			}
		}
		if err == nil {
			unix.Close(parent)
		}
	}
	if len(kept) == 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bound[id] == nil {
		b.bound[id] = map[string]*bound{}
	}
	for dir, cur := range kept {
		b.bound[id][dir] = cur
		if b.closed || b.removing[id] > 0 || b.removals[id] != removals {
			b.drop(id, dir) // removed or closing meanwhile
		}
	}
	return false
}

// count is how many sessions are bound.
func (b *binder) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.boundCount()
}

// boundIDs yields each session with a bind: of its folders, of a transcript view, or both. b.mu is held.
func (b *binder) boundIDs() iter.Seq[string] {
	return func(yield func(string) bool) {
		for id := range b.bound {
			if !yield(id) {
				return
			}
		}
		for id := range b.views {
			if b.bound[id] == nil && !yield(id) {
				return
			}
		}
	}
}

// boundCount is how many sessions have a bind, which the limit counts (a view bound is one more mount in the
// table, as a session's folders are). b.mu is held.
func (b *binder) boundCount() int {
	n := len(b.bound)
	for id := range b.views {
		if b.bound[id] == nil {
			n++
		}
	}
	return n
}

package mount

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount/inspect"
)

// The two processes of a confined mount (helper.go) talk over a socket pair with net/rpc: the serving daemon asks
// the privileged helper to bind, unmount and abort (helperService, as "Helper"). Nothing else crosses: session ids and folder names,
// which the helper treats as a session's input: ids are checked by the id rule (binder.enqueue, Removing),
// folder names against the list. The mountpoint and the connection are the helper's own, never taken from a call.

// helperService is the privileged helper, as the serving process calls it: its binder (remotebinder.go) and its
// control (control.go).
type helperService struct {
	b   *binder // nil when the mount binds nothing
	mnt string

	mu       sync.Mutex
	removals map[uint64]func()
	next     uint64
	minor    uint32 // the mount's FUSE connection, once known (connection)
	// used: when each session was last asked for, which is when the serving process last looked inside it: the
	// binder releases the least recently used first.
	used map[string]int64
	// ended: the daemon asked for the mount to end (unmount, detach, abort), so no daemon takes over (the
	// Holder asks, ending).
	ended bool
}

// end says the mount is being ended.
func (s *helperService) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// holderHost is the helper as its holder's host (takeover.Host).
type holderHost struct{ s *helperService }

func (h holderHost) Connection() (uint32, error) { return h.s.connection() }
func (h holderHost) Abort() error                { return h.s.Abort(struct{}{}, nil) }

func (h holderHost) Ending() bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.ended
}

func (h holderHost) ReleaseBinds() bool {
	if h.s.b == nil {
		return true
	}
	h.s.b.close()
	return h.s.b.workerStopped()
}

func newHelperService(mnt string) *helperService {
	return &helperService{mnt: mnt, removals: map[uint64]func(){}, used: map[string]int64{}}
}

// maxUsed bounds the usage record (a serving process that sends endless ids gets its record forgotten, not the
// helper's memory filled).
const maxUsed = 1 << 17

// lastUsed is when each of ids was last asked for (unix nanoseconds; 0: never).
func (s *helperService) lastUsed(ids []string) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		out[id] = s.used[id]
	}
	return out
}

// errNoBinder answers binding calls to a mount that binds nothing (--max-binds 0).
var errNoBinder = errors.New("this mount binds nothing")

// Want binds the sessions' folders (binder.want; ids failing the id rule are ignored there).
func (s *helperService) Want(ids []string, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	now := time.Now().UnixNano()
	s.mu.Lock()
	if len(s.used)+len(ids) > maxUsed {
		s.used = map[string]int64{}
	}
	for _, id := range ids {
		if layout.ValidateID(id) == nil {
			s.used[id] = now
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.b.Want(id)
	}
	return nil
}

// ViewArgs name a transcript view of a session, and the tree's number of the ask (viewbinds.go).
type ViewArgs struct {
	ID, Name string
	Seq      uint64
}

// BindView binds a transcript view in use (binder.BindView; the id and the name are checked there).
func (s *helperService) BindView(v ViewArgs, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	if layout.ValidateID(v.ID) == nil {
		s.mu.Lock()
		if len(s.used) >= maxUsed {
			s.used = map[string]int64{}
		}
		s.used[v.ID] = time.Now().UnixNano()
		s.mu.Unlock()
	}
	s.b.BindView(v.ID, v.Name, v.Seq)
	return nil
}

// ReleaseViews detaches session id's view binds before it answers (binder.ReleaseViews).
func (s *helperService) ReleaseViews(v ViewArgs, _ *struct{}) error {
	if err := layout.ValidateID(v.ID); err != nil {
		return err
	}
	if s.b == nil {
		return errNoBinder
	}
	s.b.ReleaseViews(v.ID, v.Seq)
	return nil
}

// WantFilled binds a lazy folder once it holds something (binder.wantFilled).
func (s *helperService) WantFilled(idDir [2]string, _ *struct{}) error {
	if !bind.Lazy(idDir[1]) {
		return fmt.Errorf("%q is not a folder bound once it holds something", idDir[1])
	}
	if s.b == nil {
		return errNoBinder
	}
	s.b.wantFilled(idDir[0], idDir[1])
	return nil
}

// WantBound checks every bound session (binder.wantBound).
func (s *helperService) WantBound(_ struct{}, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	s.b.wantBound()
	return nil
}

// Removing detaches session id's binds before a removal through the mount; Removed ends it.
func (s *helperService) Removing(id string, token *uint64) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	if s.b == nil {
		return errNoBinder
	}
	done := s.b.Removing(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.removals[s.next] = done
	*token = s.next
	return nil
}

// Removed ends the removal Removing began.
func (s *helperService) Removed(token uint64, _ *struct{}) error {
	s.mu.Lock()
	done := s.removals[token]
	delete(s.removals, token)
	s.mu.Unlock()
	if done != nil {
		done()
	}
	return nil
}

// Unmount detaches the binds and unmounts the mount (go-fuse's retries: the kernel may still be releasing
// files); an error says it is busy.
func (s *helperService) Unmount(_ struct{}, _ *struct{}) error {
	s.end()
	if s.b != nil {
		s.b.close()
	}
	var err error
	for try, delay := 0, time.Duration(0); try < 5; try++ {
		if err = unmountAs(s.mnt, 0); err == nil || !errors.Is(err, syscall.EBUSY) {
			break
		}
		delay = 2*delay + 5*time.Millisecond
		time.Sleep(delay)
	}
	return err
}

// Detach detaches the binds and the mount lazily: it serves on until its last user leaves. The binds go through
// their own descriptors (binder.close); a lazy unmount takes whatever else is mounted beneath the mount, so no
// name is walked through the mount.
func (s *helperService) Detach(_ struct{}, _ *struct{}) error {
	s.end()
	s.connection() // noted while the mount table still shows it: Abort may follow
	if s.b != nil {
		s.b.close()
	}
	return unmountAs(s.mnt, syscall.MNT_DETACH)
}

// Abort ends the mount's FUSE connection (fusectl): the processes still inside get errors. The connection is
// the helper's own mount's, from the mount table, never a number the daemon sends: a daemon that is not
// itself any more must not abort another filesystem.
func (s *helperService) Abort(_ struct{}, _ *struct{}) error {
	s.end()
	minor, err := s.connection()
	if err != nil {
		return err
	}
	return inspect.Abort(minor)
}

// connection is the FUSE connection of the mount at s.mnt (its device minor), read from the mount table once.
func (s *helperService) connection() (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.minor != 0 {
		return s.minor, nil
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(s.mnt))
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType != FSType {
		return 0, fmt.Errorf("no sessionfs mount at %s", s.mnt)
	}
	s.minor = uint32(mounts[len(mounts)-1].Minor)
	return s.minor, nil
}

// Users lists the processes that keep the mount busy (Users: it reads /proc, which the daemon may not).
func (s *helperService) Users(_ struct{}, out *[]string) error {
	*out = Users(s.mnt)
	return nil
}

// Thread tells the binder's thread id (its lookups through the mount are not uses); Begin starts the binder once
// the serving process knows it.
func (s *helperService) Thread(_ struct{}, tid *int) error {
	if s.b == nil {
		return errNoBinder
	}
	*tid = s.b.thread()
	return nil
}

func (s *helperService) Begin(_ struct{}, _ *struct{}) error {
	if s.b == nil {
		return errNoBinder
	}
	s.b.start()
	return nil
}

// PollHack makes the kernel's one POLL request (pollHack).
func (s *helperService) PollHack(_ struct{}, _ *struct{}) error {
	pollHack(s.mnt)
	return nil
}

// pollHack makes the kernel ask the serving process for POLL once, so that it learns POLL is not supported
// (go-fuse's own mount does this; with a mount made by the daemon, the helper does). The helper trusts nothing the
// mount answers: the name is opened beneath the mount's root with no symlink and no mount crossed, and a FIFO or a
// device answered there neither blocks the open (O_NONBLOCK) nor becomes a terminal (O_NOCTTY); the mount is nodev.
func pollHack(mnt string) {
	root, err := unix.Open(mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	fd, err := layout.OpenBeneathNoMounts(root, pollHackName, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	unix.Close(root)
	if err != nil {
		return
	}
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	unix.Close(fd)
}

// pollHackName is the name go-fuse answers for the POLL probe (its fuse/poll.go).
const pollHackName = ".go-fuse-epoll-hack"

package layout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A run lease makes one runner per session, across every host that shares the store: exec, run and resume hold
// an flock on <store>/locks/<id>.run while their command runs. On a shared filesystem with global locks
// (JuiceFS, CephFS, MooseFS, NFSv4) the lock is the cluster's, and it dies with its holder: with the process
// (its descriptor closes), or with the host's filesystem client (the filesystem expires the client's session).
// The file lives beside Update's locks, outside the session: a session's processes can neither replace it
// (which would let a second runner lock a new inode) nor hold it to block runs forever.

// Holder says who holds a session's lease, for the message a second runner prints.
type Holder struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
}

// ThisProcess is the Holder for the calling process, now.
func ThisProcess() Holder {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return Holder{Host: host, PID: os.Getpid(), Since: time.Now()}
}

// ErrRunning is the kind of a lease refused because another runner holds it (test with errors.Is).
var ErrRunning = errors.New("session is running")

// RunningError is a refused lease: session ID is held by Holder (nil when its record could not be read).
type RunningError struct {
	ID     string
	Holder *Holder
}

func (e *RunningError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("session %s is running (another runner holds its lease)", e.ID)
	}
	return fmt.Sprintf("session %s is running on host %s (pid %d) since %s", e.ID, e.Holder.Host, e.Holder.PID, clock(e.Holder.Since))
}

func (e *RunningError) Is(target error) bool { return target == ErrRunning }

// clock is a time as a person reads it: 10:02 today, Nov 22 10:02 before.
func clock(t time.Time) string {
	t, now := t.Local(), time.Now()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("Jan 2 15:04")
}

// Lease is a held run lease. Release it when the run ends; a process that dies releases it with its descriptor.
type Lease struct {
	fd int
}

// maxLeaseRecord bounds what is read of a lease file.
const maxLeaseRecord = 4096

// TryLease takes session id's run lease for h, or fails at once with a *RunningError when another runner holds
// it.
func (s *Store) TryLease(id string, h Holder) (*Lease, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	rel := leaseName(id)
	fd, err := s.openLeaseFile(rel)
	if err != nil {
		return nil, wrap("lease", id, s.Root+"/"+rel, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		unix.Close(fd)
		return nil, &RunningError{ID: id, Holder: s.leaseHolder(rel)}
	}
	if err != nil {
		unix.Close(fd)
		return nil, wrap("lease", id, s.Root+"/"+rel, err)
	}
	// The record is only for the message others print: a failure to write it does not cost the lease. It is
	// synced, since a shared filesystem's client may keep unsynced writes to itself while the file stays open.
	rec, _ := json.Marshal(h)
	if unix.Ftruncate(fd, 0) == nil {
		if _, err := unix.Pwrite(fd, rec, 0); err == nil {
			_ = unix.Fsync(fd)
		}
	}
	return &Lease{fd: fd}, nil
}

// Lease takes session id's run lease, waiting for it while another runner holds it when wait is true
// (polling every poll; busy is told of the holder once). Without wait it is TryLease. ctx ends the wait.
func (s *Store) Lease(ctx context.Context, id string, h Holder, wait bool, poll time.Duration, busy func(*RunningError)) (*Lease, error) {
	told := false
	for {
		l, err := s.TryLease(id, h)
		var re *RunningError
		if !wait || !errors.As(err, &re) {
			return l, err
		}
		if !told && busy != nil {
			busy(re)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for session %s: %w", id, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}

// Release gives the lease back. The record is cleared first, so that a later refusal never names a runner
// that has gone.
func (l *Lease) Release() error {
	if l == nil || l.fd < 0 {
		return nil
	}
	_ = unix.Ftruncate(l.fd, 0)
	// Unlocked before the close: on a FUSE filesystem (MooseFS's client, sessionfs) a close releases the lock
	// only when the kernel's RELEASE is served, after close(2) has returned, and a runner on another host asking
	// at once was refused (TestCSIOnePodPerSessionAcrossHosts). An unlock is answered before it returns.
	_ = unix.Flock(l.fd, unix.LOCK_UN)
	err := unix.Close(l.fd)
	l.fd = -1
	return err
}

func leaseName(id string) string { return locksName + "/" + id + ".run" }

// openLeaseFile opens (creating) the lease file beneath the store, never through a symlink (ELOOP), never
// blocking (a FIFO opened read-write with O_NONBLOCK does not wait for a peer), and only a regular file.
func (s *Store) openLeaseFile(rel string) (int, error) {
	flags := unix.O_RDWR | unix.O_CREAT | unix.O_NONBLOCK | unix.O_NOCTTY
	fd, err := s.root.OpenAt(rel, flags, 0o600)
	if errors.Is(err, unix.ENOENT) { // an old store, or one whose locks folder was removed
		if err = s.root.MkdirAll(locksName, 0o700, -1, -1); err == nil {
			fd, err = s.root.OpenAt(rel, flags, 0o600)
		}
	}
	if err == unix.ELOOP {
		return -1, fmt.Errorf("%w: the lease file is a symlink", ErrDamaged)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: the lease file is not a regular file (mode %#o)", ErrDamaged, st.Mode&unix.S_IFMT)
	}
	return fd, nil
}

// leaseHolder reads the holder's record, nil when there is none yet (the holder is between taking the lock and
// writing it) or it is damaged.
func (s *Store) leaseHolder(rel string) *Holder {
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		b, err := s.root.ReadRegular(rel, maxLeaseRecord)
		if err != nil {
			return nil
		}
		if len(b) == 0 {
			continue
		}
		var h Holder
		if json.Unmarshal(b, &h) != nil || h.Host == "" {
			return nil
		}
		return &h
	}
	return nil
}

// LeaseHolder is who the record of session id's run lease names: the runner holding it, or nil when none is
// recorded. A runner that died without releasing leaves its record (the lock itself went with it): callers on
// the holder's host check its pid.
func (s *Store) LeaseHolder(id string) *Holder {
	if ValidateID(id) != nil || s.open() != nil {
		return nil
	}
	return s.leaseHolder(leaseName(id))
}

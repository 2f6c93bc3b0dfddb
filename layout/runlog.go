package layout

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Run logs. What a run printed (stdout and stderr, as the user saw them) is kept in <root>/logs/<id>/<n>.log, in
// the store's trusted root and never in the session, whose processes write what they like there (a link planted
// where the log goes would make the runner write through it). The log is capped: when <n>.log would pass half the
// cap it becomes <n>.log.1 (replacing the one before) and a new <n>.log begins, so the log keeps the last part of
// the output, between half the cap and the cap, as docker's json-file driver does with two files. A removed
// session's logs wait beside it in <root>/logs/.trash/<trashed name> until it is restored or gc deletes them; a
// renamed session's follow it.
const (
	logsName  = "logs"
	logsTrash = ".trash" // beneath logs
	// DefaultLogCap is what a run's log keeps at most, in bytes.
	DefaultLogCap = 4 << 20
	// maxLogRead bounds what a reader takes of one log file (its writer keeps it under its cap).
	maxLogRead = 256 << 20
)

func logsRel(id string) string { return logsName + "/" + id }

func trashedLogsRel(trashedName string) string { return logsName + "/" + logsTrash + "/" + trashedName }

func logRel(id string, n int) string { return logsRel(id) + "/" + strconv.Itoa(n) + ".log" }

// RunLog is a run's log being written. Its writes never fail: a log that cannot be written stops keeping output
// (Err says why), and the run goes on.
type RunLog struct {
	s        *Store
	rel      string
	uid, gid int
	cap      int64

	mu   sync.Mutex
	fd   int
	size int64
	err  error
}

// CreateRunLog starts the log of run n of session id, owned by uid:gid (the session's; -1: the process's), keeping
// at most capBytes (<= 0: DefaultLogCap). Whatever was at its names (a previous session of the id's log, or
// anything planted there) is removed first, and the file is made new (O_EXCL, never through a link).
func (s *Store) CreateRunLog(id string, n int, uid, gid int, capBytes int64) (*RunLog, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if n <= 0 || n > maxRunNumber {
		return nil, fmt.Errorf("run number %d out of range", n)
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	if capBytes <= 0 {
		capBytes = DefaultLogCap
	}
	// logs/ is traversable by the users whose sessions a root runner ran; each session's folder is its owner's.
	if err := s.root.MkdirAll(logsName, 0o711, -1, -1); err != nil {
		return nil, wrap("log", id, s.Root+"/"+logsName, err)
	}
	if err := s.root.MkdirAll(logsRel(id), 0o700, uid, gid); err != nil {
		return nil, wrap("log", id, s.Root+"/"+logsRel(id), err)
	}
	l := &RunLog{s: s, rel: logRel(id, n), uid: uid, gid: gid, cap: capBytes, fd: -1}
	if err := s.removeLogFile(l.rel + ".1"); err != nil {
		return nil, wrap("log", id, s.Root+"/"+l.rel+".1", err)
	}
	if err := l.create(); err != nil {
		return nil, wrap("log", id, s.Root+"/"+l.rel, err)
	}
	return l, nil
}

// RunLogPath is where run n of session id's log is (the part being written).
func (s *Store) RunLogPath(id string, n int) string { return s.Root + "/" + logRel(id, n) }

func (s *Store) removeLogFile(rel string) error {
	if err := s.root.Remove(rel); err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}

// create makes l's file new: removed, then created exclusively (a name planted again between the two fails
// here, and nothing is written through it).
func (l *RunLog) create() error {
	if err := l.s.removeLogFile(l.rel); err != nil {
		return err
	}
	fd, err := l.s.root.OpenAt(l.rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND|unix.O_NOCTTY, 0o600)
	if err != nil {
		return err
	}
	if (l.uid >= 0 || l.gid >= 0) && os.Geteuid() == 0 {
		if err := unix.Fchown(fd, l.uid, l.gid); err != nil {
			unix.Close(fd)
			return err
		}
	}
	l.fd, l.size = fd, 0
	return nil
}

// Write keeps p, filling the current part up to half the cap and rotating then, so the two parts hold the end of
// the output without a gap; of a write past the cap only its last cap bytes can stay, and only they are written.
// It always reports all of p written: the run's output must not depend on its log.
func (l *RunLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 || l.err != nil {
		return len(p), nil
	}
	half := l.cap / 2
	b := p
	if int64(len(b)) > 2*half {
		b = b[int64(len(b))-2*half:]
	}
	for len(b) > 0 {
		if l.size >= half {
			if l.err = l.rotate(); l.err != nil {
				return len(p), nil
			}
		}
		chunk := b[:min(int64(len(b)), half-l.size)]
		n, err := unix.Write(l.fd, chunk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			l.err = err
			return len(p), nil
		}
		l.size += int64(n)
		b = b[n:]
	}
	return len(p), nil
}

// rotate makes the current file the old part and starts a new one.
func (l *RunLog) rotate() error {
	unix.Close(l.fd)
	l.fd = -1
	if err := l.s.root.Rename(l.rel, l.rel+".1", 0); err != nil {
		return err
	}
	return l.create()
}

// Err is why the log stopped keeping output, nil when it kept all it was given (within its cap).
func (l *RunLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close ends the log.
func (l *RunLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 {
		return nil
	}
	err := unix.Close(l.fd)
	l.fd = -1
	return err
}

// ErrNoLog is the kind of a run with no log kept (a TTY run, one run before logs were kept, or one whose log
// could not be made).
var ErrNoLog = errors.New("no log kept for this run")

// OpenRunLog opens run n of session id's log for reading: old is the earlier part (nil when the log never
// rotated), cur the part being written. Neither is opened through a link, and only a regular file is.
func (s *Store) OpenRunLog(id string, n int) (old, cur *os.File, err error) {
	if err := ValidateID(id); err != nil {
		return nil, nil, err
	}
	if err := s.open(); err != nil {
		return nil, nil, err
	}
	rel := logRel(id, n)
	cur, err = s.root.OpenRegular(rel, maxLogRead)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, &Error{Op: "log", ID: id, Path: s.Root + "/" + rel, Kind: ErrNoLog}
	}
	if err != nil {
		return nil, nil, wrap("log", id, s.Root+"/"+rel, err)
	}
	old, err = s.root.OpenRegular(rel+".1", maxLogRead)
	if errors.Is(err, os.ErrNotExist) {
		return nil, cur, nil
	}
	if err != nil {
		cur.Close()
		return nil, nil, wrap("log", id, s.Root+"/"+rel+".1", err)
	}
	return old, cur, nil
}

// RunLogRotated reports whether the part being written of run n of session id's log is no longer cur (it was
// rotated: the caller drains cur and opens the new part).
func (s *Store) RunLogRotated(id string, n int, cur *os.File) bool {
	var a unix.Stat_t
	if unix.Fstat(int(cur.Fd()), &a) != nil {
		return false
	}
	b, err := s.root.Lstat(logRel(id, n))
	return err == nil && (a.Dev != b.Dev || a.Ino != b.Ino)
}

// moveLogs moves session logs from one place beneath logs/ to another (a rename, the trash and back), replacing
// what is at to: logs left there by a session gone without the store are not the new one's. Best effort: logs
// left behind are replaced run by run by the next session of the id (CreateRunLog).
func (s *Store) moveLogs(from, to string) {
	if _, err := s.root.Lstat(from); err != nil {
		return
	}
	_ = os.RemoveAll(s.Root + "/" + to) // the store's own names; RemoveAll follows no link
	if i := strings.LastIndexByte(to, '/'); i > 0 {
		_ = s.root.MkdirAll(to[:i], 0o711, -1, -1)
	}
	_ = s.root.Rename(from, to, 0)
}

// sweepTrashedLogs removes the logs of removed sessions no longer in the trash (deleted by gc, or by hand).
func (s *Store) sweepTrashedLogs(trash *Dir) {
	ents, err := s.root.ReadDir(logsName + "/" + logsTrash)
	if err != nil {
		return
	}
	for _, e := range ents {
		if _, err := trash.Lstat(e.Name()); errors.Is(err, syscall.ENOENT) {
			_ = os.RemoveAll(s.Root + "/" + logsName + "/" + logsTrash + "/" + e.Name())
		}
	}
}

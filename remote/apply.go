package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// maxJoin bounds each copy of a conversation joined in memory; a larger one is kept beside on a conflict, as any
// file changed on both sides is. Joins run one at a time, so a sync holds at most two copies and their join.
const maxJoin = 64 << 20

var joining sync.Mutex

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func sumOf(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// openLocal opens rel beneath the session as a regular file, and gives it as it is now.
func (s *syncer) openLocal(rel string) (*os.File, File, error) {
	f, err := s.d.OpenRegular(rel, -1)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, layout.ErrDamaged) {
		return nil, File{}, fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	if err != nil {
		return nil, File{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, File{}, err
	}
	return f, File{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777}, nil
}

// localNow is rel as it is here now (nil: absent).
func (s *syncer) localNow(rel string) (*File, error) {
	st, err := s.d.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	return &File{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777}, nil
}

// push sends the session's rel there: only the new lines when it grew from the agreed bytes and the remote can
// append them whole, else the whole file, put atomically.
func (s *syncer) push(ctx context.Context, st step) error {
	if s.opt.DryRun {
		s.plan("push %s (%s)", st.rel, humanize.IBytes(uint64(st.l.Size)))
		s.rep.Pushed++
		s.rep.BytesOut += st.l.Size
		return nil
	}
	f, lf, err := s.openLocal(st.rel)
	if err != nil {
		return err
	}
	defer f.Close()
	if b := st.base; b != nil && st.rm != nil && !changed(st.rm, b, func(a *Agreed) File { return a.Remote }, false) &&
		lf.Size > b.Local.Size && lf.Size-b.Local.Size <= maxAtomicAppend {
		h := sha256.New()
		if n, err := io.CopyN(h, f, b.Local.Size); err == nil && n == b.Local.Size && sumOf(h) == b.Sum {
			tail := make([]byte, lf.Size-b.Local.Size)
			if _, err := io.ReadFull(f, tail); err == nil {
				h.Write(tail)
				after, ok, err := s.r.Append(ctx, st.rel, tail, *st.rm)
				if err != nil {
					return err
				}
				if ok {
					s.rep.Pushed++
					s.rep.BytesOut += int64(len(tail))
					return s.note(st.rel, &Agreed{Local: lf, Remote: after, Sum: sumOf(h)})
				}
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	h := sha256.New()
	after, err := s.r.Put(ctx, st.rel, io.TeeReader(io.LimitReader(f, lf.Size), h), lf, st.rm)
	if err != nil {
		return err
	}
	s.rep.Pushed++
	s.rep.BytesOut += lf.Size
	return s.note(st.rel, &Agreed{Local: lf, Remote: after, Sum: sumOf(h)})
}

// pull brings the remote's rel here, written beneath the session atomically, or, when it only grew past this
// side's bytes, by appending the new lines in place (an agent writing the file meanwhile loses nothing).
func (s *syncer) pull(ctx context.Context, st step) error {
	rm := *st.rm
	if s.opt.DryRun {
		s.plan("pull %s (%s)", st.rel, humanize.IBytes(uint64(rm.Size)))
		s.rep.Pulled++
		s.rep.BytesIn += rm.Size
		return nil
	}
	if err := s.roomFor(rm.Size); err != nil {
		return &refusal{st.rel, err.Error()}
	}
	if b := st.base; b != nil && st.l != nil && rm.Size > b.Remote.Size && rm.Size <= maxJoin {
		var theirs bytes.Buffer
		if err := s.r.Get(ctx, st.rel, rm, &theirs); err != nil {
			return err
		}
		tb := theirs.Bytes()
		if st.l.Size == b.Local.Size && int64(len(tb)) > b.Local.Size && sum(tb[:b.Local.Size]) == b.Sum {
			tail := tb[b.Local.Size:]
			if err := appendTo(s.d, st.rel, tail, *st.l); err != nil {
				return err
			}
			now, err := s.localNow(st.rel)
			if err != nil || now == nil {
				return fmt.Errorf("%s: %w", st.rel, ErrChanged)
			}
			s.rep.Pulled++
			s.rep.BytesIn += rm.Size
			return s.note(st.rel, &Agreed{Local: *now, Remote: rm, Sum: sum(theirs.Bytes())})
		}
		return s.writeHere(st.rel, bytes.NewReader(theirs.Bytes()), rm, st.l, func(sum string) error {
			s.rep.Pulled++
			s.rep.BytesIn += rm.Size
			return s.agreeHere(st.rel, rm, sum)
		})
	}
	return s.fetchHere(ctx, st.rel, rm, st.rel, st.l, func(sum string) error {
		s.rep.Pulled++
		s.rep.BytesIn += rm.Size
		return s.agreeHere(st.rel, rm, sum)
	})
}

// fetchHere streams the remote's from (as rm) into rel here, through writeHere; it returns once the remote's read
// has ended too.
func (s *syncer) fetchHere(ctx context.Context, from string, rm File, rel string, was *File, done func(sum string) error) error {
	pr, pw := io.Pipe()
	read := make(chan struct{})
	go func() { pw.CloseWithError(s.r.Get(ctx, from, rm, pw)); close(read) }()
	err := s.writeHere(rel, pr, rm, was, done)
	pr.CloseWithError(io.ErrClosedPipe)
	<-read
	return err
}

// writeHere writes what r yields to rel beneath the session, atomically, with f's mode and mtime, if rel is
// still was here (nil: absent); then calls done with the bytes' SHA-256.
func (s *syncer) writeHere(rel string, r io.Reader, f File, was *File, done func(sum string) error) error {
	if now, err := s.localNow(rel); err != nil {
		return err
	} else if (now == nil) != (was == nil) || now != nil && *now != *was {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := s.d.MkdirAll(dir, 0o755, s.uid, s.gid); err != nil {
			return &refusal{rel, fmt.Sprintf("its folder here: %v", err)}
		}
	}
	h := sha256.New()
	if err := s.d.WriteAtomicFrom(rel, io.TeeReader(r, h), f.Mode&0o777, s.uid, s.gid, f.time()); err != nil {
		if errors.Is(err, ErrChanged) {
			return err
		}
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	return done(sumOf(h))
}

// agreeHere notes rel as agreed after it was written here to be the remote's rm.
func (s *syncer) agreeHere(rel string, rm File, sum string) error {
	now, err := s.localNow(rel)
	if err != nil || now == nil {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	return s.note(rel, &Agreed{Local: *now, Remote: rm, Sum: sum})
}

// roomFor refuses a pull of size bytes that would leave the store's filesystem with less than 64 MiB free: a
// remote cannot fill this disk.
func (s *syncer) roomFor(size int64) error {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(s.d.Fd(), &fs); err != nil {
		return nil
	}
	free := int64(fs.Bavail) * fs.Bsize
	if size > free-64<<20 {
		return fmt.Errorf("the remote's file of %s would not fit here (%s free)", humanize.IBytes(uint64(size)), humanize.IBytes(uint64(max(free, 0))))
	}
	return nil
}

// removeThere removes from the remote a file removed here, if the remote still has it as agreed.
func (s *syncer) removeThere(ctx context.Context, st step) error {
	s.plan("remove %s there", st.rel)
	if s.opt.DryRun {
		s.rep.RemovedThere++
		return nil
	}
	if st.rm != nil {
		if err := s.r.Remove(ctx, st.rel, *st.rm); err != nil {
			return err
		}
	}
	s.rep.RemovedThere++
	return s.note(st.rel, nil)
}

// removeHere removes a file the remote removed, if it is here as agreed.
func (s *syncer) removeHere(st step) error {
	s.plan("remove %s here", st.rel)
	if s.opt.DryRun {
		s.rep.RemovedHere++
		return nil
	}
	if now, err := s.localNow(st.rel); err != nil {
		return err
	} else if now != nil && (st.l == nil || *now != *st.l) {
		return fmt.Errorf("%s: %w", st.rel, ErrChanged)
	}
	if err := s.d.Remove(st.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", st.rel, err)
	}
	s.rep.RemovedHere++
	return s.note(st.rel, nil)
}

// appendTo appends b to the regular file rel beneath d, if it is still was (never through a link, never opening a
// FIFO's writer end to wait).
func appendTo(d *layout.Dir, rel string, b []byte, was File) error {
	fd, err := d.OpenAt(rel, unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != was.Size || st.Mtim.Nano() != was.Mtime {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("pull %s: %w", rel, err)
	}
	return nil
}

// conflictName is where a conflict keeps the losing copy of rel.
func (s *syncer) conflictName(rel string) string {
	return rel + ".sessionfs-conflict-" + s.opt.Label
}

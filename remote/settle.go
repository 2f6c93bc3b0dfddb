package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/merge"
)

// settle resolves a file both sides changed. The same bytes on both are simply agreed. A conversation both sides
// appended to (merge.Appended) is joined line by line, the same join on both sides. Anything else (a SQLite
// database too: never merged by its bytes) keeps the newer version at its name on both sides and the other beside
// it as <name>.sessionfs-conflict-<label>, on both sides.
func (s *syncer) settle(ctx context.Context, st step) error {
	l, rm := *st.l, *st.rm
	if s.opt.DryRun {
		if merge.Appended(st.rel) && l.Size <= maxJoin && rm.Size <= maxJoin {
			s.plan("join %s (changed on both sides)", st.rel)
			s.rep.Joined++
		} else {
			s.plan("settle %s (changed on both sides: the newer kept, the other beside it unless they are the same)", st.rel)
			s.rep.Conflicts++
		}
		return nil
	}
	if merge.Appended(st.rel) && l.Size <= maxJoin && rm.Size <= maxJoin {
		if err := s.join(ctx, st); !errors.Is(err, errTooManyLines) {
			return err
		}
	}
	if l.Size == rm.Size {
		same, lsum, err := s.sameBytes(ctx, st.rel, rm)
		if err != nil {
			return err
		}
		if same {
			return s.note(st.rel, &Agreed{Local: l, Remote: rm, Sum: lsum})
		}
	}
	s.rep.Conflicts++
	keep := s.conflictName(st.rel)
	if rm.Mtime > l.Mtime {
		// The remote's is newer: this side's goes beside, here and there.
		if err := s.d.Rename(st.rel, keep, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("keep %s beside: %w", st.rel, err)
		}
		if err := s.pull(ctx, step{rel: st.rel, rm: st.rm}); err != nil {
			return err
		}
		kf, err := s.localNow(keep)
		if err != nil || kf == nil {
			return fmt.Errorf("%s: %w", keep, ErrChanged)
		}
		return s.push(ctx, step{rel: keep, l: kf})
	}
	// This side's is newer: the remote's goes beside, here and there.
	if err := s.roomFor(rm.Size); err != nil {
		return &refusal{st.rel, err.Error()}
	}
	if err := s.fetchHere(ctx, st.rel, rm, keep, nil, func(string) error { return nil }); err != nil {
		return err
	}
	s.rep.BytesIn += rm.Size
	kf, err := s.localNow(keep)
	if err != nil || kf == nil {
		return fmt.Errorf("%s: %w", keep, ErrChanged)
	}
	if err := s.push(ctx, step{rel: keep, l: kf}); err != nil {
		return err
	}
	return s.push(ctx, step{rel: st.rel, l: st.l, rm: st.rm})
}

// sameBytes reports whether the session's rel and the remote's have the same bytes, reading both.
func (s *syncer) sameBytes(ctx context.Context, rel string, rm File) (bool, string, error) {
	f, _, err := s.openLocal(rel)
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	lh, rh := sha256.New(), sha256.New()
	if _, err := io.Copy(lh, f); err != nil {
		return false, "", err
	}
	if err := s.r.Get(ctx, rel, rm, rh); err != nil {
		return false, "", err
	}
	s.rep.BytesIn += rm.Size
	return bytes.Equal(lh.Sum(nil), rh.Sum(nil)), sumOf(lh), nil
}

// join makes both copies of a conversation the line by line union of the two (merge.Conversation): lines only added
// after a side's own are appended there, in place; otherwise that side's file is replaced whole, atomically, if
// it did not change meanwhile.
func (s *syncer) join(ctx context.Context, st step) error {
	joining.Lock()
	defer joining.Unlock()
	rm := *st.rm
	// Each copy is read with its lines counted on the way: one of more lines than a join takes is given up on at
	// once, before it is all in memory.
	f, lf, err := s.openLocal(st.rel)
	if err != nil {
		return err
	}
	ours := bytes.NewBuffer(make([]byte, 0, lf.Size))
	_, err = io.Copy(&lineBound{w: ours}, io.LimitReader(f, lf.Size))
	f.Close()
	if err != nil {
		return err
	}
	theirs := bytes.NewBuffer(make([]byte, 0, rm.Size))
	if err := s.r.Get(ctx, st.rel, rm, &lineBound{w: theirs}); err != nil {
		return err
	}
	s.rep.BytesIn += rm.Size
	joined := merge.Conversation(ours.Bytes(), theirs.Bytes())
	now := time.Now()
	if tail, ok := bytes.CutPrefix(joined, ours.Bytes()); ok {
		if len(tail) > 0 {
			if err := appendTo(s.d, st.rel, tail, lf); err != nil {
				return err
			}
		}
	} else if err := s.writeHere(st.rel, bytes.NewReader(joined), File{Mode: lf.Mode, Mtime: now.UnixNano()}, &lf, func(string) error { return nil }); err != nil {
		return err
	}
	after := rm
	if tail, ok := bytes.CutPrefix(joined, theirs.Bytes()); ok {
		if len(tail) > 0 {
			a, appended, err := s.r.Append(ctx, st.rel, tail, rm)
			if err != nil {
				return err
			}
			if !appended {
				a, err = s.r.Put(ctx, st.rel, bytes.NewReader(joined), File{Size: int64(len(joined)), Mode: lf.Mode, Mtime: now.UnixNano()}, &rm)
				if err != nil {
					return err
				}
			}
			after = a
			s.rep.BytesOut += int64(len(tail))
		}
	} else {
		a, err := s.r.Put(ctx, st.rel, bytes.NewReader(joined), File{Size: int64(len(joined)), Mode: lf.Mode, Mtime: now.UnixNano()}, &rm)
		if err != nil {
			return err
		}
		after = a
		s.rep.BytesOut += int64(len(joined))
	}
	here, err := s.localNow(st.rel)
	if err != nil || here == nil {
		return fmt.Errorf("%s: %w", st.rel, ErrChanged)
	}
	s.rep.Joined++
	return s.note(st.rel, &Agreed{Local: *here, Remote: after, Sum: sum(joined)})
}

// errTooManyLines says a conversation has too many lines to join (merge.MaxLines): both copies are kept instead.
var errTooManyLines = errors.New("too many lines to join")

// lineBound passes writes to w until they hold more than merge.MaxLines lines, then fails with errTooManyLines.
type lineBound struct {
	w     io.Writer
	lines int
}

func (l *lineBound) Write(p []byte) (int, error) {
	if l.lines += bytes.Count(p, []byte("\n")); l.lines > merge.MaxLines {
		return 0, errTooManyLines
	}
	return l.w.Write(p)
}

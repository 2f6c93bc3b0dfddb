package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/travel"
)

// Direction says which sides a sync may change.
type Direction int

const (
	Both Direction = iota // each side gets the other's changes
	Push                  // only the remote is changed
	Pull                  // only this store is changed
)

// Options tune a sync.
type Options struct {
	Direction Direction
	// DryRun plans and reports, changing nothing on either side.
	DryRun bool
	// WithCredentials moves the agents' credential files too (never, by default, either way).
	WithCredentials bool
	// Label names copies kept beside on a conflict (<name>.sessionfs-conflict-<label>); the time by default.
	Label string
	// Total is told beforehand how many bytes will move, Progress of each moved; either may be nil.
	Total, Progress func(n int64)
}

// Report says what a sync did (or, on a dry run, would do).
type Report struct {
	Pushed, Pulled, RemovedThere, RemovedHere, Joined, Conflicts, Folded int
	// Changed counts files that changed while the sync ran: left for the next one.
	Changed int
	// Refused says why each file the remote offered was not taken (too big for this disk...).
	Refused []string
	// Waiting counts files changed on both sides that a one-way sync left alone.
	Waiting  int
	BytesOut int64
	BytesIn  int64
	// Plan lists each step, one line each ("push workspace/a.go (12 B)").
	Plan []string
}

// holdsBack is a Remote whose changes are seen only after Commit (a bucket's manifest): what a sync did there
// is not recorded as agreed until then.
type holdsBack interface{ HoldsBack() bool }

// Sync brings session id of the store and its copy r to the same state, as opt says.
func Sync(ctx context.Context, store *layout.Store, id string, r Remote, opt Options) (rep Report, err error) {
	d, err := store.OpenSession(id)
	if err != nil {
		return rep, err
	}
	defer d.Close()
	mp := manifestPath(store, id, r.String())
	if err := os.MkdirAll(filepath.Dir(mp), 0o700); err != nil {
		return rep, err
	}
	unlock, err := lockFile(mp + ".lock")
	if err != nil {
		return rep, err
	}
	defer unlock()
	m, err := loadManifest(mp, r.String())
	if err != nil {
		return rep, fmt.Errorf("sync %s: its last state (%s): %w", id, mp, err)
	}
	defer m.close()
	uid, gid, err := d.Owner()
	if err != nil {
		return rep, err
	}
	s := &syncer{d: d, r: r, m: m, opt: opt, rep: &rep, uid: uid, gid: gid, mu: &sync.Mutex{}}
	if hb, ok := r.(holdsBack); ok && hb.HoldsBack() {
		s.deferNotes, s.pending = true, map[string]*Agreed{}
	}
	if p, ok := r.(interface{ SetProgress(func(int64)) }); ok {
		p.SetProgress(opt.Progress)
	}
	if s.opt.Label == "" {
		s.opt.Label = time.Now().UTC().Format("20060102T150405Z")
	}
	if opt.Direction != Push && !opt.DryRun {
		if _, err := layout.FoldProjectsIn(d); err != nil {
			return rep, err
		}
	}
	if s.remote, err = r.List(ctx); err != nil {
		return rep, err
	}
	if err := s.pass(ctx); err != nil {
		return rep, err
	}
	// Transcripts pulled in under other cwds' folders are folded into the canonical one, and the move synced.
	if opt.Direction != Push && !opt.DryRun && rep.Pulled > 0 {
		folded, err := layout.FoldProjectsIn(d)
		if err != nil {
			return rep, err
		}
		if rep.Folded = len(folded); rep.Folded > 0 && opt.Direction == Both {
			if err := s.pass(ctx); err != nil {
				return rep, err
			}
		}
	}
	if opt.DryRun {
		return rep, nil
	}
	if err := r.Commit(ctx); err != nil {
		return rep, err
	}
	if s.deferNotes {
		for rel, a := range s.pending {
			if a == nil {
				delete(m.Files, rel)
			} else {
				m.Files[rel] = *a
			}
		}
	}
	if err := m.save(); err != nil {
		return rep, err
	}
	if n := len(rep.Refused); n > 0 {
		shown := rep.Refused[:min(n, 5)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf("; and %d more", n-len(shown))
		}
		return rep, fmt.Errorf("%d files not synced: %s%s", n, strings.Join(shown, "; "), more)
	}
	if rep.Changed > 0 {
		return rep, fmt.Errorf("%d files changed while the sync ran: sync again", rep.Changed)
	}
	return rep, nil
}

type syncer struct {
	d          *layout.Dir
	r          Remote
	m          *Manifest
	opt        Options
	rep        *Report
	uid, gid   int
	remote     map[string]File // the remote as listed, then as this sync left it
	deferNotes bool
	pending    map[string]*Agreed
	mu         *sync.Mutex // over m, remote and pending, which the workers share
}

// step is one file's change.
type step struct {
	rel     string
	l, rm   *File   // as each side has it now (nil: absent)
	base    *Agreed // as they last agreed (nil: never)
	lChange bool
	rChange bool
}

// pass compares the session, the remote and their last agreed state, and applies each file's change.
func (s *syncer) pass(ctx context.Context) error {
	local, err := walkLocal(s.d, s.opt.WithCredentials)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for rel := range local {
		names[rel] = true
	}
	for rel := range s.remote {
		names[rel] = true
	}
	for rel := range s.m.Files {
		names[rel] = true
	}
	var steps []step
	var total int64
	for rel := range names {
		if skipped(rel, s.opt.WithCredentials) {
			continue
		}
		st := step{rel: rel}
		if f, ok := local[rel]; ok {
			st.l = &f
		}
		if f, ok := s.remote[rel]; ok {
			st.rm = &f
		}
		if a, ok := s.m.Files[rel]; ok {
			st.base = &a
		}
		st.lChange = changed(st.l, st.base, func(a *Agreed) File { return a.Local }, true)
		st.rChange = changed(st.rm, st.base, func(a *Agreed) File { return a.Remote }, false)
		if rel == layout.MetaFile {
			// Each store's record of the session (its labels, aliases, cwds) is its own: it goes there only to
			// make the session there, and never comes back.
			if st.l == nil || st.rm != nil {
				continue
			}
			st.lChange, st.rChange = true, false
		}
		if !st.lChange && !st.rChange {
			continue
		}
		steps = append(steps, st)
		if st.lChange && st.l != nil && s.opt.Direction != Pull {
			total += st.l.Size
		}
		if st.rChange && st.rm != nil && s.opt.Direction != Push {
			total += st.rm.Size
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return strings.Compare(a.rel, b.rel) })
	if s.opt.Total != nil && !s.opt.DryRun {
		s.opt.Total(total)
	}
	// A file that changed on one side only is independent of the others: those move several at a time (a sync of
	// many small files is bound by round trips, not bytes); files changed on both sides are settled one by one.
	var single, both []step
	for _, st := range steps {
		if st.lChange && st.rChange {
			both = append(both, st)
		} else {
			single = append(single, st)
		}
	}
	n := parallel
	if s.opt.DryRun {
		n = 1 // the plan in order
	}
	if err := s.applyAll(ctx, single, n); err != nil {
		return err
	}
	return s.applyAll(ctx, both, 1)
}

// parallel is how many files move at once.
const parallel = 8

// applyAll applies steps, n at a time, each worker with a report of its own, added to the sync's at the end.
func (s *syncer) applyAll(ctx context.Context, steps []step, n int) error {
	next := make(chan step)
	reps := make([]Report, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		w := *s
		w.rep = &reps[i]
		g.Go(func() error {
			for st := range next {
				if err := w.applyOne(gctx, st); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(next)
		for _, st := range steps {
			select {
			case next <- st:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	err := g.Wait()
	for _, r := range reps {
		s.rep.add(r)
	}
	return err
}

// applyOne applies one step; a file changed meanwhile or refused is counted, and the sync goes on.
func (s *syncer) applyOne(ctx context.Context, st step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.apply(ctx, st)
	if err != nil && st.rel == layout.MetaFile {
		return nil // the other store made its own record meanwhile: it keeps it
	}
	if errors.Is(err, ErrChanged) {
		s.rep.Changed++
		return nil
	}
	var refused *refusal
	if errors.As(err, &refused) {
		s.rep.Refused = append(s.rep.Refused, refused.Error())
		return nil
	}
	if why := unsyncable(err); why != "" {
		s.rep.Refused = append(s.rep.Refused, st.rel+": "+why)
		return nil
	}
	return err
}

// add adds what o counted to r.
func (r *Report) add(o Report) {
	r.Pushed += o.Pushed
	r.Pulled += o.Pulled
	r.RemovedThere += o.RemovedThere
	r.RemovedHere += o.RemovedHere
	r.Joined += o.Joined
	r.Conflicts += o.Conflicts
	r.Changed += o.Changed
	r.Waiting += o.Waiting
	r.BytesOut += o.BytesOut
	r.BytesIn += o.BytesIn
	r.Refused = append(r.Refused, o.Refused...)
	r.Plan = append(r.Plan, o.Plan...)
}

// changed reports whether a side's file differs from the agreed state (local: size, mtime and mode; remote: size
// and mtime to the second, all a listing gives).
func changed(now *File, base *Agreed, side func(*Agreed) File, local bool) bool {
	if now == nil || base == nil {
		return (now == nil) != (base == nil)
	}
	was := side(base)
	if local {
		return now.Size != was.Size || now.Mtime != was.Mtime || now.Mode != was.Mode
	}
	return now.Size != was.Size || now.Mtime/1e9 != was.Mtime/1e9
}

// apply carries one file's change to the side that lacks it.
func (s *syncer) apply(ctx context.Context, st step) error {
	dir := s.opt.Direction
	switch {
	case st.lChange && !st.rChange:
		if dir == Pull {
			return nil
		}
		if st.l == nil {
			return s.removeThere(ctx, st)
		}
		return s.push(ctx, st)
	case st.rChange && !st.lChange:
		if dir == Push {
			return nil
		}
		if st.rm == nil {
			return s.removeHere(st)
		}
		return s.pull(ctx, st)
	}
	// Changed on both sides.
	switch {
	case st.l == nil && st.rm == nil:
		return s.note(st.rel, nil)
	case st.rm == nil: // removed there, changed here: the change wins
		if dir == Pull {
			return nil
		}
		return s.push(ctx, st)
	case st.l == nil:
		if dir == Push {
			return nil
		}
		return s.pull(ctx, st)
	}
	if dir != Both {
		s.rep.Waiting++
		s.plan("wait %s: changed on both sides (sync both ways to settle it)", st.rel)
		return nil
	}
	return s.settle(ctx, st)
}

func (s *syncer) plan(format string, args ...any) {
	s.rep.Plan = append(s.rep.Plan, fmt.Sprintf(format, args...))
}

// note records rel as agreed (nil: forgotten), in the journal at once unless the remote holds its changes back.
func (s *syncer) note(rel string, a *Agreed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a == nil {
		delete(s.remote, rel)
	} else {
		s.remote[rel] = a.Remote
	}
	if s.deferNotes {
		s.pending[rel] = a
		return nil
	}
	return s.m.note(rel, a)
}

// skipped reports whether rel never syncs: sessionfs's own files, temporary files of a write in progress, and
// (unless asked for) every file that holds credentials, alone or among other state (travel.HoldsCredentials):
// each machine keeps its own.
func skipped(rel string, withCredentials bool) bool {
	base := path.Base(rel)
	switch {
	case rel == ".sessionfs-run" || strings.HasPrefix(rel, ".sessionfs-run/"):
		return true
	case strings.HasPrefix(base, tmpPrefix) || writeTemp.MatchString(base):
		return true
	case !withCredentials && travel.HoldsCredentials(rel):
		return true
	}
	return false
}

// writeTemp is the name layout.Dir.WriteAtomicFrom writes under before its rename.
var writeTemp = lazyregexp.New(`^\..+\.tmp-(\d+)-\d+$`)

// walkLocal lists the session's regular files beneath its descriptor, never following a link. A temporary file
// of a write that was killed (its process gone) is removed: it was never a file of the session. Unless
// withCredentials, a hard link to a file that holds credentials is left out too, whatever its name.
func walkLocal(d *layout.Dir, withCredentials bool) (map[string]File, error) {
	out := map[string]File{}
	type inode struct{ dev, ino uint64 }
	secret := map[inode]bool{}
	linked := map[string]inode{}
	err := d.Walk(func(rel string, st *unix.Stat_t) error {
		if rel == ".sessionfs-run" {
			return layout.SkipDir
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil
		}
		if m := writeTemp.FindStringSubmatch(path.Base(rel)); m != nil {
			if pid, _ := strconv.Atoi(m[1]); pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
				d.Remove(rel)
			}
			return nil
		}
		if st.Nlink > 1 && !withCredentials {
			id := inode{st.Dev, st.Ino}
			if travel.HoldsCredentials(rel) {
				secret[id] = true
			}
			linked[rel] = id
		}
		out[rel] = File{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777}
		return nil
	})
	for rel, id := range linked {
		if secret[id] {
			delete(out, rel)
		}
	}
	return out, err
}

// lockFile takes an exclusive lock on p (made if missing): one sync of a session with a remote at a time.
func lockFile(p string) (func(), error) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.New("another sync of this session with this remote is running")
	}
	return func() { f.Close() }, nil
}

// refusal is a file of the remote not taken, for a reason of its own: the sync goes on with the others.
type refusal struct{ rel, why string }

func (r *refusal) Error() string { return r.rel + ": " + r.why }

// unsyncable says why err leaves one file unsynced while the others go on ("" for an error that stops the sync): a
// link or a file where this side needs a folder, a name too long once a temporary or conflict suffix is added, a
// file replaced by what is not one.
func unsyncable(err error) string {
	for _, e := range []error{unix.ELOOP, unix.ENOTDIR, unix.ENAMETOOLONG, unix.EEXIST, unix.EISDIR, layout.ErrDamaged} {
		if errors.Is(err, e) {
			return err.Error()
		}
	}
	return ""
}

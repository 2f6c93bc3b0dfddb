package modal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	modalsdk "github.com/modal-labs/modal-client/go"
	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/merge"
)

// VolumeName is the session's Volume: a valid Modal name (at most 64 characters of [A-Za-z0-9._-]) derived from
// the id; a long id keeps its start and gets a hash of the whole.
func VolumeName(id string) string {
	name := "sessionfs-" + id
	if len(name) <= 64 {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	return name[:55] + "-" + hex.EncodeToString(sum[:])[:8]
}

// Syncer moves one session between the store and its Volume.
type Syncer struct {
	client   *Client
	cp       pb.ModalClientClient // on the SDK's connection, through its interceptors
	store    *layout.Store
	id       string
	root     string
	http     *http.Client
	volumeID string
	// Progress is told of uploaded and downloaded bytes, and Total, beforehand, of how many more bytes will be
	// (it adds up); either may be nil.
	Progress, Total func(n int64)
	afterWalk       func() // a test's hook: the session changes while a push runs
	cb              sync.Mutex
	// Label names conflict copies (<name>.sessionfs-conflict-<label>); it defaults to the time.
	Label string
}

func (s *Syncer) label() string {
	if s.Label != "" {
		return s.Label
	}
	return time.Now().UTC().Format("20060102T150405Z")
}

// NewSyncer opens (creating if missing) the session's v2 Volume through the SDK.
func NewSyncer(ctx context.Context, c *Client, store *layout.Store, id string) (*Syncer, error) {
	if _, err := store.Get(id); err != nil {
		return nil, err
	}
	vol, err := c.SDK.Volumes.FromName(ctx, VolumeName(id), &modalsdk.VolumeFromNameParams{
		Environment: c.Config.Environment, CreateIfMissing: true, Version: 2})
	if err != nil {
		return nil, Explain(err, c.Config)
	}
	cp, err := c.control()
	if err != nil {
		return nil, err
	}
	return &Syncer{client: c, cp: cp, store: store, id: id, root: store.Dir(id), volumeID: vol.VolumeID,
		http: &http.Client{Timeout: 5 * time.Minute}}, nil
}

// PushReport says what a push did.
type PushReport struct {
	Files, Blocks, Deleted int
	Bytes                  int64
	Merged                 PullReport // the Volume's own changes, brought in first
}

// Push makes the Volume hold the session as it is: files changed since the last agreed state are offered block
// by block, many files per call, and only the blocks the Volume lacks are uploaded (in parallel, with retries);
// files removed locally are removed from the Volume.
func (s *Syncer) Push(ctx context.Context) (PushReport, error) {
	var rep PushReport
	st, err := s.begin(ctx)
	if err != nil {
		return rep, err
	}
	defer st.d.Close()
	mp, m, d, remote := st.path, st.m, st.d, st.remote
	// What changed on the Volume since the last agreed state (a late commit, a failed pull) is brought in first,
	// as a pull would, keeping both versions of a file changed on both sides: it is never overwritten.
	if err := s.merge(ctx, d, m, remote, s.label(), &rep.Merged); err != nil {
		return rep, err
	}
	local, err := walk(d)
	if err != nil {
		return rep, err
	}
	if s.afterWalk != nil {
		s.afterWalk()
	}
	var ups []*upload
	for rel, lf := range local {
		if base, ok := m.Files[rel]; ok && base.Size == lf.Size && base.Mtime == lf.Mtime && base.Mode == lf.Mode {
			continue
		}
		u, err := uploadOfFile(d, rel, lf.Size, lf.Mode)
		if errors.Is(err, fs.ErrNotExist) {
			delete(local, rel) // removed since the walk: a deletion
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("push %s: %w", rel, err)
		}
		ups = append(ups, u)
	}
	for rel := range m.Files {
		if _, ok := local[rel]; ok {
			continue
		}
		if err := s.remove(ctx, rel, false); err != nil {
			return rep, err
		}
		delete(m.Files, rel)
		rep.Deleted++
	}
	// A symlink the Volume has (a run's script made it there) and that is gone here goes there too.
	links, err := walkLinks(d)
	if err != nil {
		return rep, err
	}
	for rel := range m.Links {
		if _, ok := links[rel]; !ok {
			if err := s.remove(ctx, rel, false); err != nil {
				return rep, err
			}
			rep.Deleted++
		}
	}
	m.Links = links
	// The Volume is a tree that will not put a file where a folder is, nor beneath a file: what is in the way
	// (left by a type change here, or kept here under a conflict name by the merge) goes first.
	for _, u := range ups {
		for q := path.Dir(u.rel); q != "."; q = path.Dir(q) {
			if r, ok := remote[q]; ok && r.Type != pb.FileEntry_DIRECTORY {
				if err := s.remove(ctx, q, false); err != nil {
					return rep, err
				}
				delete(remote, q)
			}
		}
		if r, ok := remote[u.rel]; ok && r.Type != pb.FileEntry_FILE {
			if err := s.remove(ctx, u.rel, r.Type == pb.FileEntry_DIRECTORY); err != nil {
				return rep, err
			}
			delete(remote, u.rel)
		}
	}
	rep.Blocks, rep.Bytes, err = s.putFiles(ctx, ups)
	if err != nil {
		return rep, err
	}
	for _, u := range ups {
		lf := local[u.rel]
		m.Files[u.rel] = Entry{Size: lf.Size, Mtime: lf.Mtime, Mode: lf.Mode, Blocks: u.blocks}
		rep.Files++
	}
	if err := s.recordRemote(ctx, m); err != nil {
		return rep, err
	}
	m.Volume = s.volumeID
	return rep, m.save(mp)
}

// remove removes rel from the Volume (a folder with what it holds if recursive); one already gone is fine.
func (s *Syncer) remove(ctx context.Context, rel string, recursive bool) error {
	_, err := s.cp.VolumeRemoveFile2(ctx, pb.VolumeRemoveFile2Request_builder{VolumeId: s.volumeID, Path: rel, Recursive: recursive}.Build())
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("remove %s from the Volume: %w", rel, Explain(err, s.client.Config))
	}
	return nil
}

// total and progress call Total and Progress one at a time (transfers run in parallel).
func (s *Syncer) total(n int64) {
	if s.Total != nil && n > 0 {
		s.cb.Lock()
		defer s.cb.Unlock()
		s.Total(n)
	}
}

func (s *Syncer) progress(n int64) {
	if s.Progress != nil {
		s.cb.Lock()
		defer s.cb.Unlock()
		s.Progress(n)
	}
}

// remoteEntry is an entry as the Volume lists it: no mode, whole-second mtimes.
type remoteEntry struct {
	Type  pb.FileEntry_FileType
	Size  uint64
	Mtime uint64
}

// listRemote lists the Volume (all of it but sessionfs's own folder, and names that are not plain relative paths).
func (s *Syncer) listRemote(ctx context.Context) (map[string]remoteEntry, error) {
	stream, err := s.cp.VolumeListFiles2(ctx, pb.VolumeListFiles2Request_builder{VolumeId: s.volumeID, Path: "/", Recursive: true}.Build())
	if err != nil {
		return nil, Explain(err, s.client.Config)
	}
	out := map[string]remoteEntry{}
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, Explain(err, s.client.Config)
		}
		for _, e := range resp.GetEntries() {
			rel := strings.TrimPrefix(e.GetPath(), "/")
			if cleanRel(rel) && rel != reservedDir && !strings.HasPrefix(rel, reservedDir+"/") {
				out[rel] = remoteEntry{Type: e.GetType(), Size: e.GetSize(), Mtime: e.GetMtime()}
			}
		}
	}
}

// listSettled lists the Volume once no entry has the current second as its mtime: the Volume's mtimes are whole
// seconds, so a file written again later in the same second, to the same size, would look unchanged. Waiting
// for the next second (at most one) makes any later write show a later mtime.
func (s *Syncer) listSettled(ctx context.Context) (map[string]remoteEntry, error) {
	for attempt := 0; ; attempt++ {
		remote, err := s.listRemote(ctx)
		if err != nil || attempt == 1 {
			return remote, err
		}
		now := time.Now()
		recent := false
		for _, r := range remote {
			recent = recent || int64(r.Mtime) >= now.Unix()
		}
		if !recent {
			return remote, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(now.Truncate(time.Second).Add(time.Second + 10*time.Millisecond).Sub(now)):
		}
	}
}

func files(remote map[string]remoteEntry) map[string]remoteEntry {
	out := map[string]remoteEntry{}
	for rel, r := range remote {
		if r.Type == pb.FileEntry_FILE {
			out[rel] = r
		}
	}
	return out
}

// cleanRel reports whether a path the Volume lists is a plain relative path (the sandbox wrote it and may be
// hostile): no "..", no "." or empty part, no NUL. Others are never pulled.
func cleanRel(rel string) bool {
	return rel != "" && !strings.ContainsRune(rel, 0) && path.Clean(rel) == rel && rel != "." && rel != ".." &&
		!strings.HasPrefix(rel, "../") && !strings.HasPrefix(rel, "/")
}

// recordRemote notes the Volume's view (its mtimes) of every agreed file, for the next three-way comparison.
func (s *Syncer) recordRemote(ctx context.Context, m *Manifest) error {
	remote, err := s.listSettled(ctx)
	if err != nil {
		return err
	}
	for rel, e := range m.Files {
		if r, ok := remote[rel]; ok && r.Type == pb.FileEntry_FILE {
			e.RemoteMtime = r.Mtime
			m.Files[rel] = e
		}
	}
	return nil
}

// PullReport says what a pull did. Joined counts the conversations both sides added to, joined line by line.
type PullReport struct {
	Applied, Deleted, Conflicts, Folded, Joined int
}

// Pull brings the Volume's changes into the store by a three-way comparison of the Volume, the last agreed state
// and the store. A file changed on both sides takes the Volume's (the run's) version, and the local one is kept
// beside it as <name>.sessionfs-conflict-<run>: nothing is lost. Each file is replaced atomically, so the mount
// shows it whole at once. Transcript folders the run made for other cwds are folded into the canonical one
// (a name taken there keeps both, the incoming one as <name>.sessionfs-conflict-fold).
func (s *Syncer) Pull(ctx context.Context, run string) (PullReport, error) {
	var rep PullReport
	st, err := s.begin(ctx)
	if err != nil {
		return rep, err
	}
	defer st.d.Close()
	mp, m, d, remote := st.path, st.m, st.d, st.remote
	if err := s.merge(ctx, d, m, remote, run, &rep); err != nil {
		return rep, err
	}
	folded, err := s.fold(ctx, d, m)
	if err != nil {
		return rep, err
	}
	rep.Folded = folded
	m.Volume = s.volumeID
	return rep, m.save(mp)
}

// merge applies the Volume's changes since the last agreed state m to the session d (see Pull).
func (s *Syncer) merge(ctx context.Context, d *layout.Dir, m *Manifest, remote map[string]remoteEntry, run string, rep *PullReport) error {
	local, err := walk(d)
	if err != nil {
		return err
	}
	rr, err := s.loadReport(ctx)
	if err != nil {
		return err
	}
	remote = files(remote)
	// Files download in parallel (as the official client's do); a failure lets the others finish, and each is
	// saved as it lands.
	var g errgroup.Group
	g.SetLimit(8)
	var mu sync.Mutex                                          // m and rep, which the downloads update
	fail := func(err error) error { _ = g.Wait(); return err } // the downloads under way end first
	bases := maps.Clone(m.Files)
	var todo int64
	for rel, r := range remote {
		if base, known := bases[rel]; !known || r.Size != uint64(base.Size) || r.Mtime != base.RemoteMtime {
			todo += int64(r.Size)
		}
	}
	s.total(todo)
	for _, rel := range slices.Sorted(maps.Keys(remote)) {
		r := remote[rel]
		base, known := bases[rel]
		if known && r.Size == uint64(base.Size) && r.Mtime == base.RemoteMtime {
			// The Volume did not change it; the run may have changed its mode only.
			if lf, ok := local[rel]; ok && rr != nil && lf.Mode == base.Mode && withExec(base.Mode, rr.exec[rel]) != base.Mode {
				mode := withExec(base.Mode, rr.exec[rel])
				if err := chmodRegular(d, rel, mode); err != nil {
					return fail(err)
				}
				base.Mode = mode
				mu.Lock()
				err := m.note(rel, &base)
				mu.Unlock()
				if err != nil {
					return fail(err)
				}
			}
			continue
		}
		// A folder here where the Volume has a file, or a file here where it has a folder: the Volume's file is
		// kept beside, under a conflict name (the next push replaces it there with what is here).
		if place := clashFree(d, rel, ".sessionfs-conflict-"+run); place != rel {
			rep.Conflicts++
			g.Go(func() error { return s.downloadAs(ctx, d, rel, place, 0o644) })
			continue
		}
		lf, exists := local[rel]
		localChanged := exists && (!known || lf.Size != base.Size || lf.Mtime != base.Mtime)
		if localChanged && merge.Appended(rel) && r.Size <= maxJoin && lf.Size <= maxJoin {
			// A conversation both sides added to: joined line by line, no conflict (the next push sends the join).
			g.Go(func() error {
				if err := s.join(ctx, d, rel, lf.Mode); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				rep.Joined++
				return m.note(rel, &Entry{Size: int64(r.Size), Mode: lf.Mode, RemoteMtime: r.Mtime})
			})
			continue
		}
		if localChanged {
			if err := d.Rename(rel, rel+".sessionfs-conflict-"+run, 0); err != nil {
				return fail(err)
			}
			rep.Conflicts++
		}
		// The listing has no modes: a known file keeps the mode agreed, a new one is 0644; the run's report says
		// which it left executable.
		mode := uint32(0o644)
		if known {
			mode = base.Mode
		}
		if rr != nil {
			mode = withExec(mode, rr.exec[rel])
		}
		g.Go(func() error {
			if err := s.download(ctx, d, rel, mode); err != nil {
				return err
			}
			e, err := entryOf(d, rel)
			if err != nil {
				return err
			}
			e.RemoteMtime = r.Mtime
			mu.Lock()
			defer mu.Unlock()
			rep.Applied++
			return m.note(rel, &e) // saved at once: an interruption keeps it
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for rel, base := range m.Files {
		if _, ok := remote[rel]; ok {
			continue
		}
		// The run removed it: remove it here too, unless it changed here since (then it is kept, and pushed).
		lf, exists := local[rel]
		if exists && lf.Size == base.Size && lf.Mtime == base.Mtime {
			if err := d.Remove(rel); err != nil {
				return err
			}
			rep.Deleted++
		}
		if err := m.note(rel, nil); err != nil {
			return err
		}
	}
	if rr == nil {
		return nil
	}
	if err := applyTree(d, m, rr); err != nil {
		return err
	}
	return s.dropReport(ctx)
}

// fold folds transcript folders the run made for other cwds into the canonical one (layout.FoldProjects, as the
// mount does), then removes the Volume's copies of what it moved, so they are folded once.
func (s *Syncer) fold(ctx context.Context, d *layout.Dir, m *Manifest) (int, error) {
	if _, err := layout.FoldProjectsIn(d); err != nil {
		return 0, err
	}
	const projects = layout.ProjectsDir + "/"
	canonical := projects + layout.CanonicalProject + "/"
	n := 0
	for rel := range m.Files {
		if !strings.HasPrefix(rel, projects) || strings.HasPrefix(rel, canonical) || !strings.Contains(strings.TrimPrefix(rel, projects), "/") {
			continue
		}
		_, err := s.cp.VolumeRemoveFile2(ctx, pb.VolumeRemoveFile2Request_builder{VolumeId: s.volumeID, Path: rel}.Build())
		if err != nil && !isNotFound(err) {
			return n, Explain(err, s.client.Config)
		}
		delete(m.Files, rel)
		n++
	}
	return n, nil
}

func entryOf(d *layout.Dir, rel string) (Entry, error) {
	st, err := d.Lstat(rel)
	if err != nil {
		return Entry{}, err
	}
	u, err := uploadOfFile(d, rel, st.Size, st.Mode&0o777)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777, Blocks: u.blocks}, nil
}

// clashFree returns rel, or, when something here of another type is in its way (a folder at rel, a file or a
// symlink at one of its parents), rel with the first such part renamed with suffix.
func clashFree(d *layout.Dir, rel, suffix string) string {
	parts := strings.Split(rel, "/")
	for i := range parts {
		q := strings.Join(parts[:i+1], "/")
		st, err := d.Lstat(q)
		if err != nil {
			return rel // nothing there: the rest is free
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if (i < len(parts)-1 && !isDir) || (i == len(parts)-1 && isDir) {
			return q + suffix + rel[len(q):]
		}
	}
	return rel
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// syncState is what a push and a pull both start from.
type syncState struct {
	path   string                 // the manifest's
	m      *Manifest              // the last state both sides agreed on
	d      *layout.Dir            // the session's folder: the caller closes it
	remote map[string]remoteEntry // the Volume as it settled
}

// begin loads the last agreed state, opens the session's folder and lists the Volume. Everything local is
// resolved beneath the session's descriptor: a name the session made a symlink is replaced or refused, never
// written through.
func (s *Syncer) begin(ctx context.Context) (*syncState, error) {
	st := &syncState{path: manifestPath(s.store, s.id)}
	var err error
	if st.m, err = loadManifest(st.path); err != nil {
		return nil, err
	}
	if st.d, err = s.store.OpenSession(s.id); err != nil {
		return nil, err
	}
	if st.remote, err = s.listSettled(ctx); err != nil {
		st.d.Close()
		return nil, err
	}
	return st, nil
}

package nodes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/layout"
)

// View is <views folder>/<name>: the canonical entry of a row of the views table (views.go) seen under one of its
// view names. It is an anchor at the canonical entry's store path, so what is below it is the canonical entry's,
// and carries the name's view number, so its folders have inode numbers of their own (the kernel refuses a folder
// reachable under two names; files are one inode under every view). Its descendants carry its row: below a view of
// the transcript folder, writes record the name as an alias and unlink moves to the trash (passthrough.go). A row
// with an Own file (Gemini's .project_root, the cwd a name belongs to) keeps that file the name's own: the file of
// that name in the store folder named like the view, not the canonical entry's.
type View struct {
	Node
}

var _ = (parentKind)((*View)(nil))

// viewInode is the inode of view v in the views folder parent, of session id: the canonical entry (attributes st)
// seen under v's number. Its answer carries the mount's timeouts.
func (t *Tree) viewInode(ctx context.Context, parent *fs.Inode, id string, v view, st *syscall.Stat_t, gen uint64, out *fuse.EntryOut) *fs.Inode {
	if v.row.transcripts {
		t.viewLookedUp(ctx, id, v.name, parent)
	}
	attr := t.stableAttr(st, gen, v.num)
	ch := existingChild(parent, v.name, attr)
	if ch == nil {
		n := &View{Node{tree: t, base: v.target, id: id, alias: v.num, row: v.row}}
		t.nodeAdded()
		ch = parent.NewInode(ctx, n, attr)
		n.watch(v.target)
	}
	out.Attr.FromStat(st)
	out.Attr.Ino = ch.StableAttr().Ino
	noteCtime(ch, &out.Attr)
	return ch
}

// ownChild is the store path of name in the view when name is the row's Own file: the file of that name in the
// store folder named like the view (made by ownFolder), not the canonical entry's.
func (v *View) ownChild(name string) (string, bool) {
	if v.row.Own == "" || name != v.row.Own {
		return "", false
	}
	viewName, parent := v.Inode.Parent()
	if parent == nil {
		return "", true // not in the tree any more: "" makes every operation ENOENT
	}
	p, ok := asNode(parent)
	if !ok {
		return "", true
	}
	dir := p.path()
	if dir == "" {
		return "", true
	}
	return dir + "/" + viewName + "/" + name, true
}

// ownFolder makes the store folder that holds the view's own file (rel), before the file is created through the
// view as name.
func (v *View) ownFolder(name, rel string) {
	if v.row.Own == "" || name != v.row.Own || v.tree.ReadOnly || rel == "" {
		return
	}
	_ = v.tree.mkdirOwned(v.id, rel[:strings.LastIndexByte(rel, '/')])
}

// childNode: the own file is an anchor at its own store path.
func (v *View) childNode(name, rel string, dir bool) storeNode {
	if v.row.Own != "" && name == v.row.Own {
		return &Node{base: rel}
	}
	return nil
}

// A transcript view in use becomes a bind of the canonical folder onto its name (package mount's viewbinds.go):
// the daemon then sees nothing of the appends, which run at the disk's speed. What the daemon does for a view is
// kept so:
//   - the name is recorded as an alias before the bind is asked for (bindWritten), since nothing written through
//     the bind is seen;
//   - the bind is asked for at an open for writing of a file that exists (an append: a transcript's second write
//     on), never at a creation, removal or rename, so the first removal through a view goes to the trash as
//     before and does not bind it;
//   - a lookup of any other name of the session's transcript folder (another cwd's, the canonical one: what
//     Claude Code's /cd does before it moves a transcript between two names) takes the bind back before it is
//     answered, and the other names the kernel holds (but the canonical one, which no host cwd is named after)
//     are dropped before a bind is asked for: a rename between two names is made on one mount, through FUSE,
//     where a move onto itself is refused as before (Node.Rename). A session whose views are used under two
//     names at once stays with FUSE (viewContended);
//   - rows with an Own file (Gemini's) and the other agents' rows are not bound: a bind of the canonical entry
//     would show its Own file, not the name's.
//
// Nothing is lost, decided so: a removal through a bound view is a real removal, as through a run's bind of the
// canonical folder (bind.RunDirs). Claude Code removes transcripts only at start-up and by age, and every session
// is seeded with cleanupPeriodDays 36500 (agents/claude/seed.go); its start-up lists the transcript folder, and
// rm -rf of .claude or of the session walks the canonical name first (the listing's first name), each of which
// takes the bind back first, so they still reach the trash. What remains is a file removed by its path through the
// very name an agent is appending through, within seconds of an append (viewIdlePoll): that removal is final.

// ViewBinder is a Binder that binds transcript views in use (the mount's binder, or its helper's).
type ViewBinder interface {
	// BindView: session id's transcript view name is being written through. seq orders it against ReleaseViews:
	// an ask numbered at or below a release binds nothing. It must not block.
	BindView(id, name string, seq uint64)
	// ReleaseViews detaches session id's view binds (lazily) and cancels the asks up to seq, before it returns.
	ReleaseViews(id string, seq uint64)
}

// viewContended is how long a session stays with FUSE once its views are used under several names at once: a name
// taken back comes back within as long, or a third name is taken back within as long. Two processes appending under
// two names would otherwise bind and release at every append. One agent after another (a resume from another cwd,
// then another) is not contention: each new name is bound at once.
const viewContended = 2 * time.Second

// viewAskAgain: a write through FUSE of a view asked for this long ago asks again (its bind expired, or failed).
// Short: a bind released idle between two appends of a burst (nothing inside is held then) is asked for again at
// the burst's next append through FUSE, not a second of appends later.
const viewAskAgain = 50 * time.Millisecond

// viewBinds is what the tree knows of the views bound over the mount: the one asked for in each session, the
// session's transcript folder as the kernel holds it, when a session was last contended.
type viewBinds struct {
	mu        sync.Mutex
	seq       uint64
	wanted    map[string]wantedView
	folders   map[string]*fs.Inode
	released  map[string][]takenBack // the views of a session taken back for another name, within viewContended
	contended map[string]time.Time   // when its views were last found contended
}

func (s *viewBinds) init() {
	s.wanted, s.folders = map[string]wantedView{}, map[string]*fs.Inode{}
	s.released, s.contended = map[string][]takenBack{}, map[string]time.Time{}
}

// takenBack is a view taken back for another name, and when.
type takenBack struct {
	name string
	at   time.Time
}

type wantedView struct {
	name string
	seq  uint64
	at   time.Time
}

// writtenThrough: file n of a transcript folder was opened for writing. The view it was last looked up through is
// noted as written through, and asked to be bound; for a file made through a view and not looked up since, the
// view it was made in. Nothing for a file elsewhere.
func (n *Node) writtenThrough(ctx context.Context) {
	if !n.inTranscripts() {
		return
	}
	num := n.alias
	if v, ok := n.tree.lookedUpIn.Load(n.StableAttr().Ino); ok {
		num = v.(uint64)
		n.tree.wroteThrough(n.id, num)
	}
	n.tree.bindWritten(ctx, n.id, num)
}

// bindWritten asks for view number num of session id's transcript folder to be bound: a file that exists was
// opened for writing through it.
func (t *Tree) bindWritten(ctx context.Context, id string, num uint64) {
	vb, ok := t.Binder.(ViewBinder)
	if !ok || num == 0 || t.ReadOnly || t.byBinder(ctx) {
		return
	}
	key, ok := t.viewKeys.Load(num)
	if !ok {
		return
	}
	name := key.(string)
	s := &t.viewBinds
	now := time.Now()
	s.mu.Lock()
	asked := s.wanted[id].name == name && now.Sub(s.wanted[id].at) < viewAskAgain
	if asked || now.Sub(s.contended[id]) < viewContended {
		s.mu.Unlock()
		return
	}
	if s.wanted == nil {
		s.init()
	}
	s.seq++
	seq := s.seq
	s.wanted[id] = wantedView{name: name, seq: seq, at: now}
	folder := s.folders[id]
	s.mu.Unlock()
	// Off the request: session.json's write, and notifications the kernel may answer by locking the folder.
	go func() {
		t.recordAliasNow(id, name)
		if folder != nil {
			for other := range folder.Children() {
				// Looked up again, which takes the bind back. Not the canonical name: a run on the mount binds the
				// store's canonical folder over it in its own namespace (bind.RunDirs), and the kernel detaches
				// what is mounted on a name it drops, in every namespace; no host cwd is named after it.
				if other != name && other != layout.CanonicalProject {
					folder.NotifyEntry(other)
				}
			}
		}
		vb.BindView(id, name, seq)
	}()
}

// viewLookedUp: name of session id's transcript folder (the inode folder) was looked up. Another name than the
// one bound takes the bind back before the lookup is answered.
func (t *Tree) viewLookedUp(ctx context.Context, id, name string, folder *fs.Inode) {
	vb, ok := t.Binder.(ViewBinder)
	if !ok {
		return
	}
	s := &t.viewBinds
	s.mu.Lock()
	if s.wanted == nil {
		s.init()
	}
	s.folders[id] = folder
	w, ok := s.wanted[id]
	if !ok || w.name == name || t.byBinder(ctx) {
		s.mu.Unlock()
		return
	}
	delete(s.wanted, id)
	now := time.Now()
	recent := slices.DeleteFunc(s.released[id], func(b takenBack) bool { return now.Sub(b.at) >= viewContended })
	if len(recent) >= 2 || slices.ContainsFunc(recent, func(b takenBack) bool { return b.name == name }) {
		s.contended[id] = now
	}
	s.released[id] = append(recent, takenBack{w.name, now})
	seq := s.seq
	s.mu.Unlock()
	vb.ReleaseViews(id, seq)
}

// recordAliasNow records alias name of session id in session.json before it returns (recordAlias does it off the
// request path).
func (t *Tree) recordAliasNow(id, name string) {
	t.aliasesRecorded.Store(id+"/"+name, struct{}{})
	if m, err := t.Store.Get(id); err == nil && slices.Contains(m.Aliases, name) {
		return
	}
	_, _ = t.Store.Update(id, func(m *layout.Meta) error { m.AddAlias(name); return nil })
}

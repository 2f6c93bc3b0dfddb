package nodes

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// The text view: conversations/<session>/<agent>/<conversation>.md, every conversation of every agent in every
// session rendered as Markdown on read (agents/text, as sessionfs log prints it), so grep -rl, less and tail -f
// work on what was said. It is read-only, kept beside sessions/ rather than in a session's folder so a container's
// /session is unchanged, and never written into the store. Its names and sizes follow the agents' files within
// textTimeout: each answer is kept that long by the kernel, and a rendering is made again once its conversation
// changed (textcache.go).

// TextDir is the text view's folder at the mount's root.
const TextDir = "conversations"

// textTimeout is how long the kernel keeps the text view's names and attributes: what an agent adds shows within it.
const textTimeout = 500 * time.Millisecond

// The mount keeps every folder's listing cached until told otherwise (mount/opendir.go), and no watcher follows
// what the text view lists: a text folder checks its names when the kernel asks for its attributes (ls and grep
// -r do, at most every textTimeout) and has its cached listing dropped when they changed. A name looked up and
// not found is not cached either: a conversation may appear at any moment.

// textListing is what a text folder listed last.
type textListing struct {
	mu    sync.Mutex
	names string
}

// serve records ents as listed, and returns them as a listing.
func (l *textListing) serve(ents []fuse.DirEntry) fs.DirStream {
	l.mu.Lock()
	l.names = joinNames(ents)
	l.mu.Unlock()
	return fs.NewListDirStream(ents)
}

// recheck drops in's cached listing when ents are not what it listed last.
func (l *textListing) recheck(in *fs.Inode, ents []fuse.DirEntry) {
	names := joinNames(ents)
	l.mu.Lock()
	changed := l.names != names
	l.names = names
	l.mu.Unlock()
	if changed {
		go in.NotifyContent(0, 0) // not from inside the request: the kernel may hold the folder's lock
	}
}

func joinNames(ents []fuse.DirEntry) string {
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name)
		b.WriteByte('/')
	}
	return b.String()
}

// textMissing answers a lookup of a name the text view does not show: an error the kernel does not keep (the
// mount's negative timeout would hide a conversation made a moment later for that long).
func textMissing(out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	out.SetEntryTimeout(textTimeout)
	return nil, syscall.ENOENT
}

// TextRoot is conversations/: a folder per session.
type TextRoot struct {
	fs.Inode
	tree  *Tree
	texts *textCache
	textListing
}

// textSession is conversations/<id>: a folder per agent with conversations in the session.
type textSession struct {
	fs.Inode
	texts *textCache
	tree  *Tree
	id    string
	textListing
}

// textAgent is conversations/<id>/<agent>: a file per conversation.
type textAgent struct {
	fs.Inode
	texts *textCache
	tree  *Tree
	id    string
	agent *agents.Agent
	textListing
}

// textFile is conversations/<id>/<agent>/<conversation>.md.
type textFile struct {
	fs.Inode
	texts *textCache
	tree  *Tree
	id    string
	agent *agents.Agent
	conv  string

	mu    sync.Mutex
	shown syscall.Stat_t // the owner and read bits attr gave the kernel last, which it judges an open by
}

var (
	_ = (fs.NodeLookuper)((*TextRoot)(nil))
	_ = (fs.NodeReaddirer)((*TextRoot)(nil))
	_ = (fs.NodeGetattrer)((*TextRoot)(nil))
	_ = (fs.NodeLookuper)((*textSession)(nil))
	_ = (fs.NodeReaddirer)((*textSession)(nil))
	_ = (fs.NodeGetattrer)((*textSession)(nil))
	_ = (fs.NodeLookuper)((*textAgent)(nil))
	_ = (fs.NodeReaddirer)((*textAgent)(nil))
	_ = (fs.NodeGetattrer)((*textAgent)(nil))
	_ = (fs.NodeGetattrer)((*textFile)(nil))
	_ = (fs.NodeOpener)((*textFile)(nil))
	_ = (fs.NodeReader)((*textFile)(nil))
	_ = (fs.NodeReleaser)((*textFile)(nil))
)

func (r *TextRoot) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ents, errno := r.entries(); errno == 0 {
		r.recheck(&r.Inode, ents)
	}
	return textDirAttr(r.tree, ".", out)
}

func (r *TextRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if layout.ValidateID(name) != nil {
		return textMissing(out)
	}
	var st syscall.Stat_t
	if err := r.tree.textAccess(name, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return textMissing(out)
	}
	ch := r.GetChild(name)
	if ch == nil {
		ch = r.NewInode(ctx, &textSession{texts: r.texts, tree: r.tree, id: name}, fs.StableAttr{Mode: syscall.S_IFDIR})
	} else if ts, ok := ch.Operations().(*textSession); ok {
		ts.recheck(ch, ts.entries()) // a path walked again: the listing it leads to may have changed
	}
	textDirEntry(&st, out)
	return ch, 0
}

func (r *TextRoot) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ents, errno := r.entries()
	if errno != 0 {
		return nil, errno
	}
	return r.serve(ents), 0
}

// sessionEntries are the sessions the store holds.
func (r *TextRoot) entries() ([]fuse.DirEntry, syscall.Errno) {
	fd, err := r.tree.sessions.OpenAt(".", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	ents, errno := readEntries(fd, func(e *fuse.DirEntry) bool {
		return e.Mode&syscall.S_IFMT == syscall.S_IFDIR && layout.ValidateID(e.Name) == nil
	})
	for i := range ents {
		ents[i].Ino = 0 // go-fuse numbers the view's own nodes
	}
	return ents, errno
}

func (s *textSession) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	s.recheck(&s.Inode, s.entries())
	return textDirAttr(s.tree, s.id, out)
}

func (s *textSession) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := all.ByName(name)
	if err != nil {
		return textMissing(out)
	}
	convs := s.texts.conversations(s.tree, s.id, a)
	if len(convs) == 0 {
		return textMissing(out)
	}
	ch := s.GetChild(name)
	if ch == nil {
		ch = s.NewInode(ctx, &textAgent{texts: s.texts, tree: s.tree, id: s.id, agent: a}, fs.StableAttr{Mode: syscall.S_IFDIR})
	} else if ta, ok := ch.Operations().(*textAgent); ok {
		ta.recheck(ch, ta.entries())
	}
	var st syscall.Stat_t
	if err := s.tree.textAgentAccess(s.id, a, convs, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	textDirEntry(&st, out)
	return ch, 0
}

func (s *textSession) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return s.serve(s.entries()), 0
}

// entries are the agents with conversations in the session.
func (s *textSession) entries() []fuse.DirEntry {
	var ents []fuse.DirEntry
	for _, a := range all.Agents {
		if len(s.texts.conversations(s.tree, s.id, a)) > 0 {
			ents = append(ents, fuse.DirEntry{Name: a.Name, Mode: syscall.S_IFDIR})
		}
	}
	return ents
}

func (d *textAgent) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.recheck(&d.Inode, d.entries())
	var st syscall.Stat_t
	if err := d.tree.textAgentAccess(d.id, d.agent, d.texts.conversations(d.tree, d.id, d.agent), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Mode = syscall.S_IFDIR | st.Mode&0o555
	out.Ino = 0
	out.SetTimeout(textTimeout)
	return 0
}

func (d *textAgent) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	conv, ok := strings.CutSuffix(name, ".md")
	if !ok || !fileName(conv) {
		return textMissing(out)
	}
	c, ok := d.texts.conversation(d.tree, d.id, d.agent, conv)
	if !ok {
		return textMissing(out)
	}
	ch := d.GetChild(name)
	if ch == nil {
		ch = d.NewInode(ctx, &textFile{texts: d.texts, tree: d.tree, id: d.id, agent: d.agent, conv: conv}, fs.StableAttr{Mode: syscall.S_IFREG})
	}
	f := ch.Operations().(*textFile)
	f.attr(ctx, c, &out.Attr)
	out.SetEntryTimeout(textTimeout)
	out.SetAttrTimeout(textTimeout)
	return ch, 0
}

func (d *textAgent) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	return d.serve(d.entries()), 0
}

// entries are the agent's conversations in the session, a file each.
func (d *textAgent) entries() []fuse.DirEntry {
	var ents []fuse.DirEntry
	for _, c := range d.texts.conversations(d.tree, d.id, d.agent) {
		if fileName(c.ID) {
			ents = append(ents, fuse.DirEntry{Name: c.ID + ".md", Mode: syscall.S_IFREG})
		}
	}
	return ents
}

// fileName reports whether a conversation id (a session's own words: opencode's come from its database) can
// name a file: valid UTF-8 with no slash and no control character (a newline would split grep -rl's list, an
// escape would reach a terminal), not a dot name, within NAME_MAX with ".md".
func fileName(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > 250 || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r == '/' || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func (f *textFile) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	c, ok := f.texts.conversation(f.tree, f.id, f.agent, f.conv)
	if !ok {
		return syscall.ENOENT
	}
	f.attr(ctx, c, &out.Attr)
	out.SetTimeout(textTimeout)
	return 0
}

// attr is the rendering's attributes: its size, the conversation's last time, the owner of the conversation's
// file and the read bits every file the rendering reads grants (textperm.go; none when it cannot be told).
func (f *textFile) attr(ctx context.Context, c agents.Conversation, a *fuse.Attr) {
	r := f.texts.renderingFor(ctx, f.tree, f.id, f.agent, c)
	st := f.grants(r, c)
	f.mu.Lock()
	f.shown = st
	f.mu.Unlock()
	a.Mode = syscall.S_IFREG | st.Mode&0o444
	a.Owner = fuse.Owner{Uid: st.Uid, Gid: st.Gid}
	a.Size = uint64(len(r.data))
	a.Blocks = (a.Size + 511) / 512
	a.Nlink = 1
	mtime := c.Last
	if mtime.IsZero() {
		mtime = c.First
	}
	a.SetTimes(nil, &mtime, &mtime)
}

// Open serves the rendering without the kernel's page cache: what a reader holding the file open (tail -f)
// reads next is the rendering of now. The open file keeps the rendering it reads (textcache.go).
func (f *textFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	f.mu.Lock()
	h := &textOpen{granted: f.shown}
	f.mu.Unlock()
	return h, fuse.FOPEN_DIRECT_IO, 0
}

// textOpen is an open file of the text view: the rendering it keeps, and what the rendering granted when the
// kernel let the caller open it (the attributes the kernel judged the open by: attr's last).
type textOpen struct {
	textHandle
	granted syscall.Stat_t
}

// grants is what rendering r of conversation c grants: told once r's files were read (at its first use), and
// again once older than accessFresh. A read costs no listing and no stat of the files it shows.
func (f *textFile) grants(r *rendering, c agents.Conversation) syscall.Stat_t {
	r.accMu.Lock()
	defer r.accMu.Unlock()
	if r.accAt.IsZero() || time.Since(r.accAt) >= accessFresh {
		r.acc, r.accAt = f.access(c), time.Now()
	}
	return r.acc
}

// access is the owner and read bits of conversation c's rendering (textRenderAccess; none when it cannot be told).
func (f *textFile) access(c agents.Conversation) syscall.Stat_t {
	var st syscall.Stat_t
	if err := f.tree.textRenderAccess(f.id, f.agent, c, &st); err != nil {
		st = syscall.Stat_t{Mode: syscall.S_IFREG}
	}
	return st
}

// mayRead reports whether the caller of ctx may read conversation c's rendering r through h: yes while it grants
// what it did at the open, else if the caller may read it as it is now (a subagent of another owner or mode
// appeared since the open; mayRead).
func (h *textOpen) mayRead(ctx context.Context, f *textFile, r *rendering, c agents.Conversation) bool {
	now := f.grants(r, c)
	g := h.granted
	if g.Mode&0o444 != 0 && now.Uid == g.Uid && now.Gid == g.Gid && now.Mode&g.Mode&0o444 == g.Mode&0o444 {
		return true
	}
	return mayRead(ctx, &now)
}

func (f *textFile) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if h, ok := fh.(*textOpen); ok {
		f.texts.release(&h.textHandle)
	}
	return 0
}

func (f *textFile) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	c, ok := f.texts.conversation(f.tree, f.id, f.agent, f.conv)
	if !ok {
		return nil, syscall.ENOENT
	}
	o, ok := fh.(*textOpen)
	if !ok {
		return nil, syscall.EBADF
	}
	r, errno := f.texts.readFor(ctx, &o.textHandle, f.tree, f.id, f.agent, c)
	if errno != 0 {
		return nil, errno
	}
	if !o.mayRead(ctx, f, r, c) { // judged by what the rendering read, or read since
		return nil, syscall.EACCES
	}
	data := r.data
	if off >= int64(len(data)) {
		return fuse.ReadResultData(nil), 0
	}
	end := min(off+int64(len(dest)), int64(len(data)))
	return fuse.ReadResultData(data[off:end]), 0
}

// textDirAttr is a text view folder's attributes: those of the store folder rel, read-only (textperm.go).
func textDirAttr(t *Tree, rel string, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := t.textAccess(rel, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Mode = syscall.S_IFDIR | st.Mode&0o555
	out.Ino = 0
	out.SetTimeout(textTimeout)
	return 0
}

// textDirEntry answers a lookup of a text view folder whose store folder's attributes textAccess gave as st.
func textDirEntry(st *syscall.Stat_t, out *fuse.EntryOut) {
	out.Attr.FromStat(st)
	out.Attr.Mode = syscall.S_IFDIR | st.Mode&0o555
	out.Attr.Ino = 0
	out.SetEntryTimeout(textTimeout)
	out.SetAttrTimeout(textTimeout)
}

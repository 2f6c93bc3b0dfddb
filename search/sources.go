package search

import (
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/agents/text"
	"github.com/sessionfs/sessionfs/layout"
)

// source is one conversation as the index keeps it: where it is read from and what that looked like. Listing
// sources costs a folder listing and a stat per file, never a read: the CLI lists every session's before it
// answers.
type source struct {
	agent *agents.Agent
	conv  agents.Conversation // what agents/text reads
	src   string              // the key: the file beneath the session, "<db>#<id>" for a conversation of rows
	rel   string              // the file to stat (and read appends of); "" for rows
	st    fstat
	sig   string // what else it reads: its subagents' files, a row conversation's summary
	// appendOnly: a JSONL file its agent only appends to; record: a database's own stat, no entries.
	appendOnly, record bool
	// subs are the subagents' transcripts (Claude's sidecar) to read, each an inode no file before it in the
	// session's listing has (a hard link of one already read is not read again).
	subs []subFile
	// dev is the file's device (with st.ino, what tells hard links apart); dupOf is the conversation whose file
	// this one's is (a hard link, or a second name of it): its text is indexed there, not again here.
	dev   uint64
	dupOf string
	// more is the size of its other files when it has several (Codex's rollouts of a thread, agents.Files.Parts),
	// read with rel's; their stats are in sig.
	more int64
}

// subFile is a subagent's transcript: its id, its file beneath the session, its stat.
type subFile struct {
	id, rel string
	st      fstat
	dev     uint64
}

// appendOnly names the agents whose conversation files only grow by lines that stand alone, so an append is
// indexed by itself (agents/text resumes them at a byte offset). Gemini's later lines replace earlier messages:
// its files are reindexed whole. So are pi's: it appends, but rewrites a file of an older format version whole
// (in place, larger) when it loads it.
var appendOnly = map[string]bool{"claude": true, "codex": true, "qwen": true}

// fstat is what tells a file changed: an append grows size, a rewrite changes ctime, a replacement ino.
type fstat struct{ size, ctime, ino int64 }

// inode tells one file from another, whatever its names.
type inode struct{ dev, ino uint64 }

func statOf(st *unix.Stat_t) fstat {
	return fstat{size: st.Size, ctime: st.Ctim.Nano(), ino: int64(st.Ino)}
}

// listing is a session's sources, and the prefixes of keys kept as they are (a database that has not changed:
// its conversations are not listed again).
type listing struct {
	sources []source
	keep    []string
	records []source // of databases, until expand
}

// sig hashes what the listing saw: the same files, of the same stats, hash the same.
func (l *listing) sig() string {
	h := fnv.New64a()
	for _, list := range [][]source{l.sources, l.records} {
		for _, s := range list {
			fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d\x00%s\x00", s.agent.Name, s.src, s.st.size, s.st.ctime, s.st.ino, s.sig)
		}
	}
	return fmt.Sprintf("%d:%x", len(l.sources)+len(l.records), h.Sum64())
}

func (l *listing) kept(src string) bool {
	for _, p := range l.keep {
		if strings.HasPrefix(src, p) {
			return true
		}
	}
	return false
}

// list lists the session's sources, every agent's; of an agent whose conversations are rows of a database, the
// database's record alone (expand lists its conversations when it changed).
func list(sess *layout.Dir) listing {
	var l listing
	for _, a := range all.Held(sess) {
		switch {
		case a == claude.Agent:
			l.sources = append(l.sources, claudeSources(sess)...)
		case a.Files != nil:
			l.sources = append(l.sources, fileSources(sess, a)...)
		case a == opencode.Agent:
			l.record(sess, a, opencode.DB)
		}
	}
	l.dedupe()
	return l
}

// dedupe reads each file of the session once, whatever its names: the first name of an inode in the listing's
// order is read (a conversation's transcript before its subagents', names sorted), any other is not. A
// conversation whose transcript is a file read already is indexed without it (its text is found in the first), a
// subagent's transcript that is one is left out of its conversation. Each changes the conversation's sig: which name is read follows
// what the session holds.
func (l *listing) dedupe() {
	first := map[inode]string{}
	for i := range l.sources {
		s := &l.sources[i]
		if s.rel == "" {
			continue
		}
		in := inode{s.dev, uint64(s.st.ino)}
		if src, ok := first[in]; ok {
			s.dupOf = src
			s.sig += "\x00dup:" + src
		} else {
			first[in] = s.src
		}
		kept := s.subs[:0]
		for _, f := range s.subs {
			in := inode{f.dev, uint64(f.st.ino)}
			if _, ok := first[in]; !ok {
				first[in] = s.src
				kept = append(kept, f)
			}
		}
		if linked := len(s.subs) - len(kept); linked > 0 {
			s.sig += fmt.Sprintf("\x00linked:%d", linked)
		}
		s.subs = kept
	}
}

// claudeSources lists Claude's transcripts: every transcript folder's, the canonical one first, each uuid once.
// Subagents' files (in the sidecar folder <uuid>/subagents) are part of the conversation: their stats are its sig.
func claudeSources(sess *layout.Dir) []source {
	folders := []string{layout.ProjectsDir + "/" + layout.CanonicalProject}
	ents, _ := sess.ReadDir(layout.ProjectsDir)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if e.IsDir() && e.Name() != layout.CanonicalProject {
			folders = append(folders, layout.ProjectsDir+"/"+e.Name())
		}
	}
	seen := map[string]bool{}
	var out []source
	for _, folder := range folders {
		dirs := map[string]bool{} // the sidecar folders: only a conversation with one can have subagents
		pick := keeping(func(e os.DirEntry) bool {
			if e.IsDir() {
				dirs[e.Name()] = true
			}
			return strings.HasSuffix(e.Name(), ".jsonl") && e.Type().IsRegular() && !seen[strings.TrimSuffix(e.Name(), ".jsonl")]
		})
		each(sess, folder, func(ents []os.DirEntry) []string {
			names := pick(ents)
			out = slices.Grow(out, len(names)) // a source is 336 bytes: grown once, not copied at each doubling
			return names
		}, func(name string, st *unix.Stat_t) {
			id := strings.TrimSuffix(name, ".jsonl")
			seen[id] = true
			rel := folder + "/" + name
			out = append(out, source{agent: claude.Agent, src: rel, rel: rel, st: statOf(st), dev: st.Dev, appendOnly: true,
				conv: agents.Conversation{Agent: claude.Agent.Name, ID: id, Path: filepath.Join(sess.Name(), rel)}})
		})
		for i := range out {
			if s := &out[i]; path.Dir(s.rel) == folder && dirs[s.conv.ID] {
				s.sig, s.subs = subagents(sess, s)
			}
		}
	}
	return out
}

// each lists folder rel beneath sess and calls fn with the lstat of each name pick takes of its entries (in name
// order) that is a regular file: one open of the folder, one fstatat a name (a name from the listing is one
// component, never followed).
func each(sess *layout.Dir, rel string, pick func([]os.DirEntry) []string, fn func(name string, st *unix.Stat_t)) {
	fd, err := sess.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() }) // which name of a file is read
	for _, name := range pick(ents) {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			fn(name, &st)
		}
	}
}

// keeping picks the entries keep takes, one by one.
func keeping(keep func(os.DirEntry) bool) func([]os.DirEntry) []string {
	return func(ents []os.DirEntry) []string {
		var out []string
		for _, e := range ents {
			if keep(e) {
				out = append(out, e.Name())
			}
		}
		return out
	}
}

// subagents lists the subagents' transcripts agents/text reads with conversation s (text.Files: its rule of
// which files they are), each with its lstat in their folder, and sums up their stats ("" when there are none).
func subagents(sess *layout.Dir, s *source) (string, []subFile) {
	files, _ := text.Files(sess, s.agent, s.conv)
	if len(files) < 2 {
		return "", nil
	}
	folder := path.Dir(files[1])
	fd, err := sess.OpenAt(folder, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", nil
	}
	defer unix.Close(fd)
	h := fnv.New64a()
	var subs []subFile
	for _, rel := range files[1:] { // sorted by id
		name := path.Base(rel)
		var st unix.Stat_t
		if path.Dir(rel) != folder || unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		fs := statOf(&st)
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", name, fs.size, fs.ctime, fs.ino)
		id := strings.TrimSuffix(strings.TrimPrefix(name, "agent-"), ".jsonl")
		subs = append(subs, subFile{id: id, rel: rel, st: fs, dev: st.Dev})
	}
	if len(subs) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d:%x", len(subs), h.Sum64()), subs
}

// fileSources lists the conversations of an agent that keeps them in files (agents.Files): Dir, its Depth
// folders, Sub and Also's, a name Name matches (agents.Files.Listed). One of several files (Parts) is one source,
// its first file's, the others' stats in its sig; it is read whole when one changes, as a compressed file is.
// Folders are read beneath the session, no symlink followed.
func fileSources(sess *layout.Dir, a *agents.Agent) []source {
	f := a.Files
	var out [][]source
	at := map[string]int{} // Parts: an id's files in out
	for _, dir := range f.Folders(sess, a.Dir, nil) {
		ids := map[string]string{}
		each(sess, dir, func(ents []os.DirEntry) []string {
			var names []string
			for _, e := range f.Listed(dir, ents) {
				ids[e.Name], names = e.ID, append(names, e.Name)
			}
			return names
		}, func(name string, st *unix.Stat_t) {
			rel, id := dir+"/"+name, ids[name]
			s := source{agent: a, src: rel, rel: rel, st: statOf(st), dev: st.Dev,
				appendOnly: appendOnly[a.Name] && !strings.HasSuffix(name, agents.Compressed),
				conv:       agents.Conversation{Agent: a.Name, ID: id, Path: filepath.Join(sess.Name(), rel)}}
			if i, ok := at[id]; ok && f.Parts {
				out[i] = append(out[i], s)
				return
			}
			at[id] = len(out)
			out = append(out, []source{s})
		})
	}
	sources := make([]source, len(out))
	for i, ss := range out {
		sources[i] = parts(ss)
	}
	return sources
}

// parts is the source of a conversation of files ss: the first by name, the others' stats its sig.
func parts(ss []source) source {
	if len(ss) == 1 {
		return ss[0]
	}
	sort.SliceStable(ss, func(i, j int) bool {
		return agents.PlainName(path.Base(ss[i].rel)) < agents.PlainName(path.Base(ss[j].rel))
	})
	s := ss[0]
	s.appendOnly = false
	h := fnv.New64a()
	for _, p := range ss[1:] {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", p.rel, p.st.size, p.st.ctime, p.st.ino)
		s.more += p.st.size
		s.conv.Parts = append(s.conv.Parts, p.conv.Path)
	}
	s.sig = fmt.Sprintf("parts:%d:%x", len(ss)-1, h.Sum64())
	return s
}

// record adds the record of a database of conversations (opencode's): its stat and its WAL's.
func (l *listing) record(sess *layout.Dir, a *agents.Agent, db string) {
	rel := a.Dir + "/" + db
	st, err := sess.Lstat(rel)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	rec := source{agent: a, src: rel, rel: rel, st: statOf(&st), record: true}
	if wal, err := sess.Lstat(rel + "-wal"); err == nil {
		w := statOf(&wal)
		rec.sig = fmt.Sprintf("%d:%d:%d", w.size, w.ctime, w.ino)
	}
	l.records = append(l.records, rec)
}

// expand adds the conversations of each database whose record changed since the index's (rows, by key), as the
// agent lists them, each one's summary its sig (a conversation that changed is reindexed whole); those of a
// database that did not change are kept as indexed. The records come last: they say the conversations were
// indexed. sess is nil when nothing changed.
func (l *listing) expand(open func() (*layout.Dir, error), rows map[string]*row) {
	for _, rec := range l.records {
		if old := rows[key(rec.agent.Name, rec.src)]; old != nil && old.fstat == rec.st && old.sig == rec.sig {
			l.keep = append(l.keep, rec.src+"#")
			l.sources = append(l.sources, rec)
			continue
		}
		sess, err := open()
		if err != nil {
			continue
		}
		cs, _ := rec.agent.Conversations(sess)
		sess.Close()
		sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
		for _, c := range cs {
			l.sources = append(l.sources, source{agent: rec.agent, src: rec.src + "#" + c.ID, conv: c,
				sig: fmt.Sprintf("%d:%d:%d:%d", c.Last.UnixNano(), c.Size, c.Messages, c.Subagents)})
		}
		l.sources = append(l.sources, rec)
	}
	l.records = nil
}

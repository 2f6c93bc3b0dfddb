package search

import (
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/agents/opencode"
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
	// subFiles are the subagents with a file of their own (Claude's sidecar): their entries' offsets are in it.
	subFiles map[string]bool
}

// appendOnly names the agents whose conversation files only grow by lines that stand alone, so an append is
// indexed by itself (agents/text resumes them at a byte offset). Gemini's later lines replace earlier messages:
// its files are reindexed whole.
var appendOnly = map[string]bool{"claude": true, "codex": true, "qwen": true}

// fstat is what tells a file changed: an append grows size, a rewrite changes ctime, a replacement ino.
type fstat struct{ size, ctime, ino int64 }

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
	for _, a := range all.Agents {
		switch {
		case a == claude.Agent:
			l.sources = append(l.sources, claudeSources(sess)...)
		case a.Files != nil:
			l.sources = append(l.sources, fileSources(sess, a)...)
		case a == opencode.Agent:
			l.record(sess, a, opencode.DB)
		}
	}
	return l
}

// claudeSources lists Claude's transcripts: every transcript folder's, the canonical one first, each uuid once.
// Subagents' files (in the sidecar folder <uuid>/subagents) are part of the conversation: their stats are its sig.
func claudeSources(sess *layout.Dir) []source {
	folders := []string{layout.ProjectsDir + "/" + layout.CanonicalProject}
	ents, _ := sess.ReadDir(layout.ProjectsDir)
	for _, e := range ents {
		if e.IsDir() && e.Name() != layout.CanonicalProject {
			folders = append(folders, layout.ProjectsDir+"/"+e.Name())
		}
	}
	seen := map[string]bool{}
	var out []source
	for _, folder := range folders {
		dirs := map[string]bool{} // the sidecar folders: only a conversation with one can have subagents
		each(sess, folder, func(e os.DirEntry) bool {
			if e.IsDir() {
				dirs[e.Name()] = true
			}
			return strings.HasSuffix(e.Name(), ".jsonl") && e.Type().IsRegular() && !seen[strings.TrimSuffix(e.Name(), ".jsonl")]
		}, func(name string, st *unix.Stat_t) {
			id := strings.TrimSuffix(name, ".jsonl")
			seen[id] = true
			rel := folder + "/" + name
			out = append(out, source{agent: claude.Agent, src: rel, rel: rel, st: statOf(st), appendOnly: true,
				conv: agents.Conversation{Agent: claude.Agent.Name, ID: id, Path: filepath.Join(sess.Name(), rel)}})
		})
		for i := range out {
			if s := &out[i]; path.Dir(s.rel) == folder && dirs[s.conv.ID] {
				s.sig, s.subFiles = subagents(sess, folder+"/"+s.conv.ID+"/subagents")
			}
		}
	}
	return out
}

// each lists folder rel beneath sess and calls fn with the lstat of each entry keep takes that is a regular
// file: one open of the folder, one fstatat a name (a name from the listing is one component, never followed).
func each(sess *layout.Dir, rel string, keep func(os.DirEntry) bool, fn func(name string, st *unix.Stat_t)) {
	fd, err := sess.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	ents, _ := f.ReadDir(-1)
	for _, e := range ents {
		if !keep(e) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			fn(e.Name(), &st)
		}
	}
}

// subagents sums up the stats of the subagents' files in folder ("" when there are none), and names them.
func subagents(sess *layout.Dir, folder string) (string, map[string]bool) {
	h := fnv.New64a()
	ids := map[string]bool{}
	each(sess, folder, func(e os.DirEntry) bool {
		id, ok := strings.CutPrefix(e.Name(), "agent-")
		_, ok2 := strings.CutSuffix(id, ".jsonl")
		return ok && ok2 && e.Type().IsRegular()
	}, func(name string, st *unix.Stat_t) {
		s := statOf(st)
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00", name, s.size, s.ctime, s.ino)
		ids[strings.TrimSuffix(strings.TrimPrefix(name, "agent-"), ".jsonl")] = true
	})
	if len(ids) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d:%x", len(ids), h.Sum64()), ids
}

// fileSources lists the conversation files of an agent that keeps one JSONL file each (agents.Files): Dir, its
// Depth folders, Sub, a name Name matches. Folders are read beneath the session, no symlink followed.
func fileSources(sess *layout.Dir, a *agents.Agent) []source {
	f := a.Files
	level := []string{path.Join(a.Dir, f.Dir)}
	for range f.Depth {
		var next []string
		for _, dir := range level {
			ents, _ := sess.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() {
					next = append(next, dir+"/"+e.Name())
				}
			}
		}
		level = next
	}
	var out []source
	for _, dir := range level {
		if f.Sub != "" {
			dir += "/" + f.Sub
		}
		each(sess, dir, func(e os.DirEntry) bool {
			return e.Type().IsRegular() && f.Name.MatchString(e.Name())
		}, func(name string, st *unix.Stat_t) {
			rel := dir + "/" + name
			out = append(out, source{agent: a, src: rel, rel: rel, st: statOf(st), appendOnly: appendOnly[a.Name],
				conv: agents.Conversation{Agent: a.Name, ID: f.Name.FindStringSubmatch(name)[1], Path: filepath.Join(sess.Name(), rel)}})
		})
	}
	return out
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

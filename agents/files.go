package agents

import (
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// Files says where an agent keeps its conversations, one JSONL file each (or several: Parts), below its folder:
// Dir/<Depth folders>/Sub/<a name Name matches>, and the folders of Also; and how they read. A name Name matches
// may end in Compressed: the file is read decompressed (compressed.go), unless its plain self is beside it.
type Files struct {
	Dir   string             // "sessions", "tmp", "projects"
	Depth int                // the folders below Dir: 3 for Codex's YYYY/MM/DD, 1 for a project
	Sub   string             // the folder (or folders, "agents/main") below those ("chats"), or ""
	Name  *lazyregexp.Regexp // a conversation file's name; its first group is the conversation's id (unless IDFolder)
	// IDFolder: the id is the name of the last of the Depth folders, which it matches (its first group the id),
	// and Name matches the file, one a folder (Kimi Code's sessions/wd_<cwd>/session_<id>/agents/main/wire.jsonl).
	IDFolder *lazyregexp.Regexp
	// Also are more folders below the agent's folder that hold conversation files themselves (Codex's
	// archived_sessions, where codex archive moves a thread's rollouts).
	Also []string
	// Partial: the name holds only the start of the id (Gemini's 8 characters); Read finds the whole of it.
	Partial bool
	// Parts: the files of one id are the parts of one conversation, in the order of their names (Codex's
	// rollouts of a thread, a reverted one's rollout-<time>-<thread>_<rollout>.jsonl after its first); else they
	// are versions of it, the one of most messages standing for it (Gemini's second file on resume).
	Parts bool
	// Read adds the lines of one conversation file to c, counting those it could not read in c.Malformed (a
	// conversation of several files is read file by file into one c).
	Read func(c *Conversation, r io.Reader)
	// Line reads one line as watch shows it: its time, "user" or "assistant" ("" for a line that is not a
	// message: metadata, the context the agent adds itself), and its text and tool calls.
	Line func(line []byte) (time.Time, string, []string, error)
	// InProject reports whether conversations filed under folder (the project folder of Dir) belong to project
	// (import --project), beyond the cwds they name; nil when only the cwds tell.
	InProject func(src *layout.Dir, folder, project string) bool
}

// File is one conversation file of an agent: Rel beneath the folder it was listed in, and the id its name gives.
type File struct {
	Agent *Agent
	Rel   string
	ID    string
}

// files lists agent a's conversation files in its folder base beneath d ("" for d itself). Folders are read
// beneath d, no symlink followed; a session's folders are bounded only by its disk, like Claude's.
func (a *Agent) files(d *layout.Dir, base string) []File {
	var out []File
	for _, dir := range a.Files.Folders(d, base, nil) {
		ents, _ := d.ReadDir(dir)
		for _, e := range a.Files.Listed(dir, ents) {
			out = append(out, File{a, dir + "/" + e.Name, e.ID})
		}
	}
	return out
}

// grouped is a's conversation files in base beneath d, one group a conversation: each file alone, or (Parts)
// the files of one id in the order of their names, plain or compressed.
func (a *Agent) grouped(d *layout.Dir, base string) [][]File {
	var out [][]File
	at := map[string]int{}
	for _, f := range a.files(d, base) {
		if i, ok := at[f.ID]; ok && a.Files.Parts {
			out[i] = append(out[i], f)
			continue
		}
		at[f.ID] = len(out)
		out = append(out, []File{f})
	}
	for _, fs := range out {
		sort.SliceStable(fs, func(i, j int) bool { return PlainName(path.Base(fs[i].Rel)) < PlainName(path.Base(fs[j].Rel)) })
	}
	return out
}

// Entry is a conversation file among a folder's entries: its name and the id the name gives.
type Entry struct{ Name, ID string }

// Listed are the conversation files among the entries ents of folder dir (a folder of Folders): the regular
// files whose names Name matches, but for a compressed one whose plain self is there too (a file the agent is
// decompressing to resume it: the plain one is whole, and the one it goes on writing).
func (f *Files) Listed(dir string, ents []os.DirEntry) []Entry {
	folderID := ""
	if f.IDFolder != nil {
		m := f.IDFolder.FindStringSubmatch(path.Base(strings.TrimSuffix(dir, "/"+f.Sub)))
		if m == nil || (f.Sub != "" && !strings.HasSuffix(dir, "/"+f.Sub)) {
			return nil
		}
		folderID = m[1]
	}
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	var out []Entry
	for _, e := range ents {
		name := e.Name()
		m := f.Name.FindStringSubmatch(name)
		if m == nil || !e.Type().IsRegular() || name != PlainName(name) && names[PlainName(name)] {
			continue
		}
		if f.IDFolder != nil {
			out = append(out, Entry{name, folderID})
			continue
		}
		out = append(out, Entry{name, m[1]})
	}
	return out
}

// PartsOf are the files beneath sess of conversation c of agent a, as a reading of it opens them now: its own,
// or (Parts) every file of its id in the folders of the files c was listed with and in Also's, in order. An agent
// moves them (codex archive), compresses them and adds more (a revert) while it runs; c's own are left out when
// gone.
func (a *Agent) PartsOf(sess *layout.Dir, c Conversation) []string {
	rels := c.Rels(sess)
	if a.Files == nil || !a.Files.Parts {
		return rels
	}
	dirs := map[string]bool{}
	var order []string
	for _, dir := range append(dirsOf(rels), a.also()...) {
		if !dirs[dir] {
			dirs[dir] = true
			order = append(order, dir)
		}
	}
	var out []string
	for _, dir := range order {
		ents, _ := sess.ReadDir(dir)
		for _, e := range a.Files.Listed(dir, ents) {
			if e.ID == c.ID {
				out = append(out, dir+"/"+e.Name)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return PlainName(path.Base(out[i])) < PlainName(path.Base(out[j])) })
	return out
}

// also are the Also folders beneath a session.
func (a *Agent) also() []string {
	var out []string
	for _, dir := range a.Files.Also {
		out = append(out, a.Dir+"/"+dir)
	}
	return out
}

func dirsOf(rels []string) []string {
	out := make([]string, len(rels))
	for i, rel := range rels {
		out[i] = path.Dir(rel)
	}
	return out
}

// levels is how many names a conversation file's path beneath the session has: the agent's folder, Dir, the
// Depth folders, Sub, the file.
func (f *Files) levels() int {
	return 3 + f.Depth + f.subLevels()
}

// subLevels is how many folders Sub names.
func (f *Files) subLevels() int {
	if f.Sub == "" {
		return 0
	}
	return strings.Count(f.Sub, "/") + 1
}

// Folders are the folders beneath d that hold conversation files below base (the agent's folder, as d sees it):
// Dir's Depth levels of folders, then Sub; then the folders of Also. Each folder on the way is passed to walked
// when it is given (the index fingerprints them). Folders are read beneath d, no symlink followed. The one walk of
// an agent's files, for listing, indexing and search alike.
func (f *Files) Folders(d *layout.Dir, base string, walked func(rel string)) []string {
	level := []string{path.Join(base, f.Dir)}
	for range f.Depth {
		var next []string
		for _, dir := range level {
			ents, _ := d.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() {
					next = append(next, dir+"/"+e.Name())
				}
			}
		}
		level = next
		for _, dir := range level {
			if walked != nil {
				walked(dir)
			}
		}
	}
	if f.Sub != "" {
		for i := range level {
			level[i] += "/" + f.Sub
			if walked != nil {
				walked(level[i])
			}
		}
	}
	for _, dir := range f.Also {
		level = append(level, path.Join(base, dir))
		if walked != nil {
			walked(path.Join(base, dir))
		}
	}
	return level
}

// FileOf names the agent and the short conversation id (its first 8 characters) of a conversation file of one
// of among with Files, rel being its path beneath the session folder; ok is false for every other file.
func FileOf(among []*Agent, rel string) (a *Agent, conv string, ok bool) {
	parts := strings.Split(rel, "/")
	for _, a := range among {
		f := a.Files
		if f == nil || len(parts) < 3 || parts[0] != a.Dir {
			continue
		}
		sub := f.subLevels()
		filed := len(parts) == f.levels() && parts[1] == f.Dir &&
			(f.Sub == "" || strings.Join(parts[len(parts)-1-sub:len(parts)-1], "/") == f.Sub)
		if !filed && (len(parts) != 3 || !slices.Contains(f.Also, parts[1])) {
			continue
		}
		es := f.Listed(strings.Join(parts[:len(parts)-1], "/"), []os.DirEntry{regularEntry(parts[len(parts)-1])})
		if len(es) == 0 {
			return nil, "", false
		}
		conv = strings.ToLower(strings.TrimPrefix(es[0].ID, a.IDPrefix))
		if len(conv) > 8 {
			conv = conv[:8]
		}
		return a, conv, true
	}
	return nil, "", false
}

// regularEntry is a directory entry of a regular file called name, for a name known to be one's.
type regularEntry string

func (e regularEntry) Name() string               { return string(e) }
func (e regularEntry) IsDir() bool                { return false }
func (e regularEntry) Type() os.FileMode          { return 0 }
func (e regularEntry) Info() (os.FileInfo, error) { return nil, os.ErrInvalid }

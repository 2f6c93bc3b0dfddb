package agents

import (
	"io"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// Files says where an agent keeps its conversations, one JSONL file each, below its folder:
// Dir/<Depth folders>/Sub/<a name Name matches>, and how they read.
type Files struct {
	Dir   string         // "sessions", "tmp", "projects"
	Depth int            // the folders below Dir: 3 for Codex's YYYY/MM/DD, 1 for a project
	Sub   string         // the folder below those ("chats"), or ""
	Name  *regexp.Regexp // a conversation file's name; its first group is the conversation's id
	// Partial: the name holds only the start of the id (Gemini's 8 characters); Read finds the whole of it.
	Partial bool
	// Read reads the lines of one conversation file into c, counting those it could not read in c.Malformed.
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
	for _, dir := range a.Files.Folders(d, path.Join(base, a.Files.Dir), nil) {
		ents, _ := d.ReadDir(dir)
		for _, e := range ents {
			if m := a.Files.Name.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
				out = append(out, File{a, dir + "/" + e.Name(), m[1]})
			}
		}
	}
	return out
}

// levels is how many names a conversation file's path beneath the session has: the agent's folder, Dir, the
// Depth folders, Sub, the file.
func (f *Files) levels() int {
	if f.Sub != "" {
		return 4 + f.Depth
	}
	return 3 + f.Depth
}

// Folders are the folders beneath d that hold conversation files, below dir (the agent's Dir, as d sees it):
// its Depth levels of folders, then Sub. Each folder on the way is passed to walked when it is given (the index
// fingerprints them). Folders are read beneath d, no symlink followed. The one walk of an agent's files, for
// listing, indexing and search alike.
func (f *Files) Folders(d *layout.Dir, dir string, walked func(rel string)) []string {
	level := []string{dir}
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
	return level
}

// FileOf names the agent and the short conversation id (its first 8 characters) of a conversation file of one
// of among with Files, rel being its path beneath the session folder; ok is false for every other file.
func FileOf(among []*Agent, rel string) (a *Agent, conv string, ok bool) {
	parts := strings.Split(rel, "/")
	for _, a := range among {
		f := a.Files
		if f == nil || len(parts) != f.levels() || parts[0] != a.Dir || parts[1] != f.Dir ||
			(f.Sub != "" && parts[len(parts)-2] != f.Sub) {
			continue
		}
		m := f.Name.FindStringSubmatch(parts[len(parts)-1])
		if m == nil {
			return nil, "", false
		}
		conv = strings.ToLower(m[1])
		if len(conv) > 8 {
			conv = conv[:8]
		}
		return a, conv, true
	}
	return nil, "", false
}

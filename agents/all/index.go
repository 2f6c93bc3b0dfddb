package all

import (
	"path"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// The store's index (layout/index.go) counts conversations through Index: every program that links the agents
// keeps records with conversations; layout knows no agent.
func init() { layout.RegisterConversationIndexer(Index) }

// Index counts each agent's conversations in the session open as sess from its folders' names, as
// CountConversations does, and says which ids they have and which folders hold them (a new conversation changes
// one of them). An agent that keeps its conversations in a database is counted as it counts them, and its ids
// are left to find to look up (AnyID).
func Index(sess *layout.Dir) layout.ConversationIndex {
	out := layout.ConversationIndex{ByAgent: map[string]int{}}
	for _, a := range Held(sess) {
		var ids map[string]bool
		switch {
		case a == claude.Agent:
			ids = claudeIndex(sess, &out)
		case a.Files != nil:
			ids = filesIndex(sess, a, &out)
		default:
			if _, err := sess.Lstat(a.Dir); err != nil {
				continue
			}
			out.Rels = append(out.Rels, a.Dir)
			for _, sec := range a.Secrets {
				out.Rels = append(out.Rels, a.Dir+"/"+sec.Name, a.Dir+"/"+sec.Name+"-wal")
			}
			if n := a.CountConversations(sess); n > 0 {
				out.ByAgent[a.Name] = n
			}
			out.AnyID = true
			continue
		}
		if len(ids) > 0 {
			out.ByAgent[a.Name] = len(ids)
		}
		for id := range ids {
			out.IDs = append(out.IDs, id)
		}
	}
	return out
}

// claudeIndex is Claude's transcripts: <uuid>.jsonl in each folder of .claude/projects (claude's
// CountConversations).
func claudeIndex(sess *layout.Dir, out *layout.ConversationIndex) map[string]bool {
	// Not .claude itself: Claude rewrites files in it all the time, and a new projects folder shows as one.
	out.Rels = append(out.Rels, layout.ProjectsDir, layout.ProjectsDir+"/"+layout.CanonicalProject)
	folders := []string{layout.ProjectsDir + "/" + layout.CanonicalProject}
	ents, _ := sess.ReadDir(layout.ProjectsDir)
	for _, e := range ents {
		if e.IsDir() && e.Name() != layout.CanonicalProject {
			folders = append(folders, layout.ProjectsDir+"/"+e.Name())
			out.Rels = append(out.Rels, layout.ProjectsDir+"/"+e.Name())
		}
	}
	ids := map[string]bool{}
	for _, folder := range folders {
		ents, _ := sess.ReadDir(folder)
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() {
				ids[name] = true
			}
		}
	}
	return ids
}

// filesIndex is an agent's conversation files: Dir/<Depth folders>/Sub/<name> and Also/<name>, each folder on
// the way a name to fingerprint.
func filesIndex(sess *layout.Dir, a *agents.Agent, out *layout.ConversationIndex) map[string]bool {
	if _, err := sess.Lstat(a.Dir); err != nil {
		return nil // made later: the session folder's own change says so
	}
	out.Rels = append(out.Rels, a.Dir, path.Join(a.Dir, a.Files.Dir))
	ids := map[string]bool{}
	for _, dir := range a.Files.Folders(sess, a.Dir, func(rel string) { out.Rels = append(out.Rels, rel) }) {
		ents, _ := sess.ReadDir(dir)
		for _, e := range a.Files.Listed(dir, ents) {
			ids[e.ID] = true
		}
	}
	return ids
}

package merge

import (
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// Appended reports whether rel, a path beneath a session folder, is a plain JSONL conversation file of an agent
// that only appends to them (agents.Agent.Appends): a file Lines may join. Claude's are its transcripts and their
// subagents' beneath .claude/projects; the others' are their Files.
func Appended(rel string) bool {
	if !strings.HasSuffix(rel, ".jsonl") {
		return false
	}
	top, _, _ := strings.Cut(rel, "/")
	a := all.ByDir(top)
	switch {
	case a == nil || !a.Appends:
		return false
	case a.Files == nil:
		return strings.HasPrefix(rel, layout.ProjectsDir+"/")
	}
	_, _, ok := agents.FileOf([]*agents.Agent{a}, rel)
	return ok
}

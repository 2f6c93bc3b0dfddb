package all

import (
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// maxSessionTop is how many names of a session's own folder Held reads: sessionfs makes a few, each agent one.
const maxSessionTop = 64

// Held is the agents whose folder the session open as sess holds, in Agents' order: a session holds one or two
// of them, and one listing of its folder spares a look into each of the others (at 10,000 sessions, 70,000
// failed lookups for the index, 8 of a search catch-up's 11 opens per session). A session's folder is the
// session's to fill: of one with more than maxSessionTop names, or unreadable, every agent is held (each then
// looks for its own folder, as it would without this), so a million names cost one getdents buffer.
func Held(sess *layout.Dir) []*agents.Agent {
	top, listed, err := sess.FoldersUpTo(maxSessionTop)
	if err != nil || !listed {
		return Agents
	}
	held := make([]*agents.Agent, 0, 2)
	for _, a := range Agents {
		if first, _, _ := strings.Cut(a.Dir, "/"); slices.Contains(top, first) {
			held = append(held, a)
		}
	}
	return held
}

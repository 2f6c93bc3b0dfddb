package nodes

import (
	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// The views table: every agent's cwd-keyed folders (agents.Views: Claude's projects/, Gemini's tmp/ and history/,
// Qwen's projects/ and tmp/, pi's sessions/), one row each. In such a folder every name the agent could make from a cwd is a view
// of the canonical entry, the one the session's workspace gets, so the agent finds the same files whatever cwd it
// starts in. Every row is served by the same rule (viewOf), the same view node (View, view.go) and the same fold;
// what sets Claude's row apart is two properties of the row: Only (from agents.Views) and transcripts (below).

// viewsRow is one row of the table, as the mount serves it.
type viewsRow struct {
	agent *agents.Agent
	agents.Views
	// transcripts: the row's folder is the store's transcript folder (layout.ProjectsDir, Claude's projects/).
	// The view names written through are recorded in session.json as the session's aliases (aliases.go), which
	// its listing shows and rmdir forgets, the names folded among them; a file unlinked below a view goes to the
	// session's transcript trash (trash.go); Claude Code's set-aside of a file moved onto itself is refused
	// (Node.Rename).
	transcripts bool
}

// viewsTable holds every agent's rows, in all.Agents' order.
var viewsTable = func() []*viewsRow {
	var rows []*viewsRow
	for _, a := range all.Agents {
		for _, v := range a.Views {
			rows = append(rows, &viewsRow{agent: a, Views: v, transcripts: a.Dir+"/"+v.Dir == layout.ProjectsDir})
		}
	}
	return rows
}()

// rowOf is agent a's row for its folder dir, or nil.
func rowOf(a *agents.Agent, dir string) *viewsRow {
	for _, r := range viewsTable {
		if r.agent == a && r.Dir == dir {
			return r
		}
	}
	return nil
}

// isView reports whether name in the row's folder is a view. The canonical name is one only in a folder of views
// only (number 0: the store's inode numbers); in a folder with entries of its own it is the folder's own entry.
func (r *viewsRow) isView(name string) bool {
	return r.Name(name) && (r.Only || name != r.Canonical)
}

// viewKey is name's key in the mount's numbering of views. The transcript folder's names are the aliases
// session.json records (wroteThrough reads them back); another agent's are prefixed with its name, so a name is
// one number in all of that agent's folders.
func (r *viewsRow) viewKey(name string) string {
	if r.transcripts {
		return name
	}
	return r.agent.Name + "/" + name
}

// view is a name of a views folder as the rule resolves it.
type view struct {
	row    *viewsRow
	name   string
	target string // the canonical entry it shows, relative to the sessions folder
	num    uint64 // its view number, mixed into the inode numbers of folders seen through it (0: the canonical name)
}

// viewOf is the views rule, one for every row: the store entry that name in the row's folder dir shows, and the
// view number its folders' inode numbers carry. ok is false for a name that is not a view (isView).
func (t *Tree) viewOf(r *viewsRow, dir, name string) (v view, ok bool) {
	if !r.isView(name) {
		return view{}, false
	}
	return view{row: r, name: name, target: dir + "/" + r.Canonical, num: t.viewNum(r, name)}, true
}

// viewNum is the view number of name in the row's folder: 0 for the canonical name, a small number unique to the
// name's key otherwise, stable for the mount's life.
func (t *Tree) viewNum(r *viewsRow, name string) uint64 {
	if name == r.Canonical {
		return 0
	}
	key := r.viewKey(name)
	if n, ok := t.viewNums.Load(key); ok {
		return n.(uint64)
	}
	n, loaded := t.viewNums.LoadOrStore(key, t.nextView.Add(1))
	if !loaded {
		t.viewKeys.Store(n, key)
	}
	return n.(uint64)
}

// fold moves what the agent filed under real folders of the row's view names (made while the store was not
// mounted) into the canonical entry, which every such name shows through the mount and would otherwise hide. In a
// folder of views only every real folder is folded: nothing else there could be seen. The transcript folder's
// folded names stay in use, as aliases. A read-only mount leaves them.
func (t *Tree) fold(id string, r *viewsRow) {
	if t.ReadOnly {
		return
	}
	isView := r.Name
	if r.Only {
		isView = func(string) bool { return true }
	}
	folded, _ := t.Store.FoldViews(id, r.agent.Dir+"/"+r.Dir, r.Canonical, isView, r.Own)
	if r.transcripts {
		for _, name := range folded {
			t.recordAlias(id, name)
		}
	}
}

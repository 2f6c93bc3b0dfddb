package nodes

import (
	"slices"

	"github.com/sessionfs/sessionfs/layout"
)

// The names of the transcript folder (Claude's projects/) a session has written through are its aliases, kept in
// its session.json: the folder lists them, and rmdir of one forgets it. An alias is recorded when it is written
// through, never when it is only looked at (a listing, a stat).

// wroteThrough notes that something was written through view number num of session id's transcript folder.
func (t *Tree) wroteThrough(id string, num uint64) {
	if num == 0 {
		return
	}
	if name, ok := t.viewKeys.Load(num); ok {
		t.recordAlias(id, name.(string))
	}
}

// recordAlias adds alias name to session id's session.json, the first time in this mount.
func (t *Tree) recordAlias(id, name string) {
	if name == layout.CanonicalProject || t.ReadOnly {
		return
	}
	if _, loaded := t.aliasesRecorded.LoadOrStore(id+"/"+name, struct{}{}); !loaded {
		// Off the request path: a lookup should not wait for session.json's fsync.
		go func() {
			_, _ = t.Store.Update(id, func(m *layout.Meta) error { m.AddAlias(name); return nil })
		}()
	}
}

// forgetAlias drops alias name of session id from session.json.
func (t *Tree) forgetAlias(id, name string) {
	t.aliasesRecorded.Delete(id + "/" + name)
	_, _ = t.Store.Update(id, func(m *layout.Meta) error {
		m.Aliases = slices.DeleteFunc(m.Aliases, func(a string) bool { return a == name })
		return nil
	})
}

// canonical is the path of session id's canonical transcript folder, relative to the sessions folder.
func canonical(id string) string {
	return id + "/" + layout.ProjectsDir + "/" + layout.CanonicalProject
}

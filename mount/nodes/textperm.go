package nodes

import (
	"path"
	"strings"
	"syscall"

	"github.com/sessionfs/sessionfs/agents"
)

// The text view shows what a session's files hold, so it lets read it exactly those who may read those files in
// the store: each file of the view takes its conversation file's owner and read bits, each folder its store
// folder's, and a class (owner, group, others) keeps a bit only if it may also pass every folder on the way down
// from the session's folder. On an --allow-other mount, another user meets the kernel's check of these (the mount
// uses default_permissions): Claude writes its transcripts 0600, which no one else may read through the view.

// textAccess is what the text view shows of store path rel (relative to the sessions folder): its attributes,
// with the permission bits the view grants (read, and search for a folder).
func (t *Tree) textAccess(rel string, st *syscall.Stat_t) error {
	if _, err := t.lstatAt(rel, st); err != nil {
		return err
	}
	bits := uint32(0o444)
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		bits = 0o555
	}
	perm := st.Mode & bits
	if rel != "." {
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			var a syscall.Stat_t
			if _, err := t.lstatAt(strings.Join(parts[:i], "/"), &a); err != nil {
				return err
			}
			perm &= passes(&a, st)
		}
	}
	st.Mode = st.Mode&syscall.S_IFMT | perm
	return nil
}

// textAgentAccess is what the text view shows of agent a's folder in session id, which lists convs: its store
// folder's attributes (textAccess), a class keeping its bits only if it may also list every store folder that
// holds one of the conversations (their names, sizes and times are those folders' to show).
func (t *Tree) textAgentAccess(id string, a *agents.Agent, convs []agents.Conversation, st *syscall.Stat_t) error {
	if err := t.textAccess(id+"/"+a.Dir, st); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range convs {
		rel, ok := strings.CutPrefix(path.Dir(c.Path), t.Store.SessionsDir()+"/")
		if seen[rel] {
			continue
		}
		seen[rel] = true
		var dir syscall.Stat_t
		if !ok || t.textAccess(rel, &dir) != nil {
			st.Mode &^= 0o777 // a folder that cannot be told: no one but root lists it
			return nil
		}
		st.Mode &^= 0o777 &^ dir.Mode
	}
	return nil
}

// passes is the classes of target's owner, group and others (as permission bits) that may search folder a on the
// way to it. A class is judged by what a grants the same user or group, else others (a conservative rule: a group
// member who owns a passes by its group's bit alone).
func passes(a, target *syscall.Stat_t) uint32 {
	var keep uint32
	search := func(owner, group bool) bool {
		switch {
		case owner:
			return a.Mode&0o100 != 0
		case group:
			return a.Mode&0o010 != 0
		default:
			return a.Mode&0o001 != 0
		}
	}
	if search(a.Uid == target.Uid, a.Gid == target.Gid && a.Uid != target.Uid) {
		keep |= 0o500
	}
	if search(false, a.Gid == target.Gid) {
		keep |= 0o050
	}
	if search(false, false) {
		keep |= 0o005
	}
	return keep
}

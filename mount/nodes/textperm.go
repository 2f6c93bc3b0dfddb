package nodes

import (
	"context"
	"path"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/text"
)

// The text view shows what a session's files hold, so it lets read it exactly those who may read those files in
// the store: each file of the view takes its conversation file's owner and read bits, each folder its store
// folder's, and a class (owner, group, others) keeps a bit only if it may also pass every folder on the way down
// from the session's folder. On an --allow-other mount, another user meets the kernel's check of these (the mount
// uses default_permissions): Claude writes its transcripts 0600, which no one else may read through the view.
//
// A rendering shows more than its conversation's file: a Claude transcript's subagents, opencode's log. So a
// rendering takes its conversation file's owner and group, and a class of theirs keeps a read bit only if it may
// read every file the rendering reads (text.Files), through every folder on the way to each: the intersection,
// decided here alone (textRenderAccess). Before, a 0644 transcript with a 0600 subagent beside it was served
// 0444 with the subagent's text in it, to a user the store refused the subagent's file. What a rendering reads
// may change while a file is open (tail -f reads the rendering of now): a read checks its caller again once the
// rendering grants less than the attributes the kernel judged the open by (textOpen's granted). What a rendering
// grants is told once its files were read and kept for accessFresh (textFile.grants): a read lists and stats none.

// textRenderAccess is what the text view shows of conversation cv's rendering (agent a, session id): the
// attributes of the conversation's file, with the read bits every file the rendering reads grants the file's
// owner, group and others. A file the rendering reads that cannot be told leaves it to root alone.
func (t *Tree) textRenderAccess(id string, a *agents.Agent, cv agents.Conversation, st *syscall.Stat_t) error {
	rel, ok := strings.CutPrefix(cv.Path, t.Store.SessionsDir()+"/")
	if !ok || !strings.HasPrefix(rel, id+"/") {
		return syscall.ENOENT
	}
	if _, err := t.lstatAt(rel, st); err != nil {
		return err
	}
	target := *st
	st.Mode = st.Mode & syscall.S_IFMT
	sess, err := t.sessions.Sub(id)
	if err != nil {
		return err
	}
	files, err := text.Files(sess, a, cv)
	_ = sess.Close()
	if err != nil || len(files) == 0 {
		return nil // cannot be told: no one but root reads it
	}
	folders := map[string]uint32{} // a folder's classes of target that may search it
	perm := uint32(0o444)
	for _, f := range files {
		perm &= t.reads(id+"/"+f, &target, folders)
	}
	st.Mode |= perm & 0o444
	return nil
}

// reads is the classes of target's owner, group and others (as permission bits) that may read store file rel,
// searching every folder on the way from the session's folder (folders keeps what each was found to grant).
func (t *Tree) reads(rel string, target *syscall.Stat_t, folders map[string]uint32) uint32 {
	var st syscall.Stat_t
	if _, err := t.lstatAt(rel, &st); err != nil {
		return 0
	}
	keep := grants(&st, target, 0o4)
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		p, ok := folders[dir]
		if !ok {
			var a syscall.Stat_t
			if _, err := t.lstatAt(dir, &a); err == nil {
				p = passes(&a, target)
			}
			folders[dir] = p
		}
		keep &= p
	}
	return keep
}

// mayRead reports whether the caller of ctx may read a file of attributes st, as the kernel would judge it by
// owner, group and others (root always may). A caller's supplementary groups are not told: it is judged as others.
func mayRead(ctx context.Context, st *syscall.Stat_t) bool {
	c, ok := fuse.FromContext(ctx)
	switch {
	case !ok:
		return false
	case c.Uid == 0:
		return true
	case c.Uid == st.Uid:
		return st.Mode&0o400 != 0
	case c.Gid == st.Gid:
		return st.Mode&0o040 != 0
	}
	return st.Mode&0o004 != 0
}

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
// way to it.
func passes(a, target *syscall.Stat_t) uint32 { return grants(a, target, 0o1) }

// grants is the classes of target's owner, group and others (as permission bits) that a's permission bit (0o4
// read, 0o1 search) lets through. A class is judged by what a grants the same user or group, else others (a
// conservative rule: a group member who owns a passes by its group's bit alone).
func grants(a, target *syscall.Stat_t, bit uint32) uint32 {
	var keep uint32
	may := func(owner, group bool) bool {
		switch {
		case owner:
			return a.Mode&(bit<<6) != 0
		case group:
			return a.Mode&(bit<<3) != 0
		default:
			return a.Mode&bit != 0
		}
	}
	if may(a.Uid == target.Uid, a.Gid == target.Gid && a.Uid != target.Uid) {
		keep |= 0o500
	}
	if may(false, a.Gid == target.Gid) {
		keep |= 0o050
	}
	if may(false, false) {
		keep |= 0o005
	}
	return keep
}

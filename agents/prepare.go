package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/sessionfs/sessionfs/layout"
)

// Prepare makes agent a's folder in the session open as sess (owned like the session) and seeds what the agent
// needs to start there unattended (a.Seed). What is already there is kept. Everything is written beneath sess,
// never through a symlink. A folder made with every session (Claude's) is its package's to seed.
func Prepare(sess *layout.Dir, a *Agent, workspaces []string) error {
	if a.Always {
		return nil
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll(a.Dir, 0o755, uid, gid); err != nil {
		return err
	}
	if a.Seed == nil {
		return nil
	}
	return a.Seed(sess, workspaces)
}

// MergeJSON reads the JSON object rel beneath sess (absent means empty), lets edit change it, and writes it back
// atomically when edit reports a change. The session wrote the file and may be hostile: it is read only if it is
// a regular file of at most layout.MaxMetaSize bytes, never through a symlink nor blocking on a FIFO, a file that
// is not a JSON object is left as it is (an error says so), and the new file replaces the name (never written
// through it) with the session folder's owner.
func MergeJSON(sess *layout.Dir, rel string, perm uint32, edit func(map[string]any) bool) error {
	m := map[string]any{}
	b, err := sess.ReadRegular(rel, layout.MaxMetaSize)
	switch {
	case err == nil && len(bytes.TrimSpace(b)) > 0:
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return fmt.Errorf("%s/%s is not a JSON object; left as it is", sess.Name(), rel)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s/%s: %w; left as it is", sess.Name(), rel, err)
	}
	if !edit(m) {
		return nil
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll(path.Dir(rel), 0o755, uid, gid); err != nil {
		return err
	}
	return sess.WriteAtomic(rel, append(out, '\n'), perm, uid, gid)
}

// ReadJSON reads the JSON object rel beneath d, as MergeJSON does, and hands it to read.
func ReadJSON(d *layout.Dir, rel string, read func(map[string]any)) error {
	return MergeJSON(d, rel, 0, func(m map[string]any) bool { read(m); return false })
}

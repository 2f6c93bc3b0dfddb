package kimi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// maxWorkspaces bounds the workspaces.json an import reads and rewrites.
const maxWorkspaces = 4 << 20

// imported readies a conversation an import copied into a session: Kimi finds a conversation only by its
// state.json (which names its cwd) in a folder of a workspace that its workspaces.json registers, so the
// conversation's state.json is copied beside its wire, and its folder (wd_<cwd>_<hash>) registered with the cwd
// state.json names. Both are read beneath the source's folder and written beneath the session's, no link followed.
func imported(src, sess *layout.Dir, rels []string) error {
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	for _, rel := range rels {
		conv := strings.TrimSuffix(path.Dir(rel), "/"+mainAgent) // sessions/wd_.../session_...
		state, err := src.ReadRegular(conv+"/state.json", maxState)
		if err != nil {
			return err
		}
		var s struct {
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(state, &s) != nil || s.Cwd == "" {
			return fmt.Errorf("%s/state.json: not a state of Kimi's naming a cwd", conv)
		}
		if err := sess.WriteAtomic(dir+"/"+conv+"/state.json", state, 0o600, uid, gid); err != nil {
			return err
		}
		if err := register(sess, path.Base(path.Dir(conv)), s.Cwd, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// register adds workspace id (a folder of sessions/) with its cwd to the session's workspaces.json, unless it is
// there; every other entry and key stays as it is.
func register(sess *layout.Dir, id, cwd string, uid, gid int) error {
	rel := dir + "/workspaces.json"
	file := map[string]json.RawMessage{}
	b, err := sess.ReadRegular(rel, maxWorkspaces)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		file["version"] = json.RawMessage("1")
	case err != nil:
		return err
	case json.Unmarshal(b, &file) != nil || file == nil:
		return fmt.Errorf("%s: not a JSON object: left as it is", rel)
	}
	workspaces := map[string]json.RawMessage{}
	if w, ok := file["workspaces"]; ok && json.Unmarshal(w, &workspaces) != nil {
		return fmt.Errorf("%s: its workspaces are not an object: left as it is", rel)
	}
	if _, ok := workspaces[id]; ok {
		return nil
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	entry, err := json.Marshal(map[string]string{"root": cwd, "name": path.Base(cwd), "created_at": now, "last_opened_at": now})
	if err != nil {
		return err
	}
	workspaces[id] = entry
	if file["workspaces"], err = json.Marshal(workspaces); err != nil {
		return err
	}
	out, err := json.Marshal(file)
	if err != nil {
		return err
	}
	return sess.WriteAtomic(rel, out, 0o600, uid, gid)
}

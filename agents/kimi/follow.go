package kimi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// maxState bounds a state.json a launch reads (Kimi's are a few hundred bytes; a session could make one any size).
const maxState = 1 << 20

// maxFollowed bounds the folders a launch looks at (workspaces and conversations): a session could make any
// number of them, and every launch of Kimi reads them.
const maxFollowed = 10000

// Follow moves every conversation of the session's Kimi Code to cwd, the cwd Kimi is about to start in (as it
// sees it): Kimi continues (-c) only a conversation whose state.json names the cwd exactly, and refuses to resume
// one (-r ID) that names another. Only the "cwd" of each state.json changes, rewritten atomically beneath the
// session, owned by the session's owner; the folder a conversation is filed in (named after the cwd it began in)
// stays, and Kimi reads it wherever it is. Nothing is followed through a link, and a state.json that is not a
// small regular JSON object is left as it is. No conversation (Kimi never ran in the session) is nothing to do.
func Follow(sess *layout.Dir, cwd string) error {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // Kimi's cwd is the kernel's, links resolved
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	root := path.Join(dir, sessionsDir)
	buckets, err := sess.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	n := 0
	tooMany := func() error {
		return errors.Join(append(errs, fmt.Errorf("%s: more than %d folders: the rest stay where they were", root, maxFollowed))...)
	}
	for _, b := range buckets {
		if !b.IsDir() {
			continue
		}
		if n++; n > maxFollowed {
			return tooMany()
		}
		ents, _ := sess.ReadDir(path.Join(root, b.Name()))
		for _, e := range ents {
			if !e.IsDir() || !sessionFolder.MatchString(e.Name()) {
				continue
			}
			if n++; n > maxFollowed {
				return tooMany()
			}
			if err := move(sess, path.Join(root, b.Name(), e.Name(), "state.json"), cwd, uid, gid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// move sets the "cwd" of the state.json at rel to cwd, keeping every other field as it is.
func move(sess *layout.Dir, rel, cwd string, uid, gid int) error {
	b, err := sess.ReadRegular(rel, maxState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a conversation being made
	}
	if err != nil {
		return err
	}
	var state map[string]json.RawMessage
	if json.Unmarshal(b, &state) != nil || state == nil {
		return fmt.Errorf("%s: not a JSON object: left as it is", rel)
	}
	var was string
	if json.Unmarshal(state["cwd"], &was) == nil && was == cwd {
		return nil
	}
	if state["cwd"], err = json.Marshal(cwd); err != nil {
		return err
	}
	out, err := json.Marshal(state)
	if err != nil {
		return err
	}
	return sess.WriteAtomic(rel, out, 0o600, uid, gid)
}

package gemini

import (
	"errors"
	"io/fs"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// seed gives Gemini CLI its trust in the session's workspaces (trustedFolders.json) and a registry that gives
// /session/workspace the canonical project folder, as a fresh Gemini would, so a run on the plain store (a
// sandbox, no mount) files its chats where the mount's views lead. What is already there is kept.
func seed(sess *layout.Dir, workspaces []string) error {
	if err := agents.MergeJSON(sess, dir+"/trustedFolders.json", 0o600, func(m map[string]any) bool {
		changed := false
		for _, w := range workspaces {
			if _, ok := m[w]; !ok {
				m[w] = "TRUST_FOLDER"
				changed = true
			}
		}
		return changed
	}); err != nil {
		return err
	}
	cwd := agents.CanonicalCwd
	slug := Slug(cwd)
	claimed := false
	if err := agents.MergeJSON(sess, dir+"/projects.json", 0o644, func(m map[string]any) bool {
		projects, _ := m["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
			m["projects"] = projects
		}
		if v, ok := projects[cwd]; ok {
			claimed = v == slug
			return false
		}
		for _, v := range projects {
			if v == slug {
				return false // another cwd holds the name: Gemini's choice stands
			}
		}
		projects[cwd] = slug
		claimed = true
		return true
	}); err != nil || !claimed {
		return err
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	for _, v := range views {
		project := dir + "/" + v.Dir + "/" + slug
		if _, err := sess.Lstat(project + "/" + v.Own); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := sess.MkdirAll(project, 0o755, uid, gid); err != nil {
			return err
		}
		if err := sess.WriteAtomic(project+"/"+v.Own, []byte(cwd), 0o644, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

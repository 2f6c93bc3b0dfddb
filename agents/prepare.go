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

// Prepare makes the agent's folder in the session open as sess (owned like the session) and seeds what the agent
// needs to start there unattended. Gemini CLI gets its trust in the session's workspaces (trustedFolders.json)
// and a registry that gives /session/workspace the canonical project folder, as a fresh Gemini would, so a run
// on the plain store (a sandbox, no mount) files its chats where the mount's views lead. What is already there is
// kept. Everything is written beneath sess, never through a symlink. Claude's folder is seeded by package claude.
func Prepare(sess *layout.Dir, a *Agent, workspaces []string) error {
	if a == Claude {
		return nil
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll(a.Dir, 0o755, uid, gid); err != nil {
		return err
	}
	if a != Gemini {
		return nil
	}
	trusted := a.Dir + "/trustedFolders.json"
	if err := mergeJSON(sess, trusted, 0o600, uid, gid, func(m map[string]any) bool {
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
	slug := GeminiSlug(CanonicalCwd)
	claimed := false
	if err := mergeJSON(sess, a.Dir+"/projects.json", 0o644, uid, gid, func(m map[string]any) bool {
		projects, _ := m["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
			m["projects"] = projects
		}
		if v, ok := projects[CanonicalCwd]; ok {
			claimed = v == slug
			return false
		}
		for _, v := range projects {
			if v == slug {
				return false // another cwd holds the name: Gemini's choice stands
			}
		}
		projects[CanonicalCwd] = slug
		claimed = true
		return true
	}); err != nil || !claimed {
		return err
	}
	for _, v := range a.Views {
		dir := a.Dir + "/" + v.Dir + "/" + slug
		if _, err := sess.Lstat(dir + "/" + v.Own); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := sess.MkdirAll(dir, 0o755, uid, gid); err != nil {
			return err
		}
		if err := sess.WriteAtomic(dir+"/"+v.Own, []byte(CanonicalCwd), 0o644, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// mergeJSON reads the JSON object rel beneath sess (absent means empty), lets edit change it, and writes it back
// atomically when edit reports a change. The session wrote the file and may be hostile: it is read only if it is
// a regular file of at most layout.MaxMetaSize bytes reached with no symlink, and a file that is not a JSON
// object is left as it is (an error says so).
func mergeJSON(sess *layout.Dir, rel string, perm uint32, uid, gid int, edit func(map[string]any) bool) error {
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
	if err := sess.MkdirAll(path.Dir(rel), 0o755, uid, gid); err != nil {
		return err
	}
	return sess.WriteAtomic(rel, append(out, '\n'), perm, uid, gid)
}

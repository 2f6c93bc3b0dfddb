package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sessionfs/sessionfs/layout"
)

// KeepTranscriptsDays is the cleanupPeriodDays seeded into a session: Claude Code deletes transcripts older than
// that at start-up, and a session must never lose one silently.
const KeepTranscriptsDays = 36500

// Files seeded beneath a session's folder.
const (
	settingsFile = layout.ClaudeDir + "/settings.json"
	stateFile    = layout.ClaudeDir + "/.claude.json"
)

// SeedSettings merges cleanupPeriodDays into the .claude/settings.json of the session open as sess, keeping every
// other setting. A value the user set larger is kept too. A settings.json that is not a JSON object is an error
// and is left untouched.
func SeedSettings(sess *layout.Dir) error {
	return mergeJSON(sess, settingsFile, 0o644, func(m map[string]any) bool {
		if v, ok := m["cleanupPeriodDays"].(float64); ok && v >= KeepTranscriptsDays {
			return false
		}
		m["cleanupPeriodDays"] = KeepTranscriptsDays
		return true
	})
}

// SeedTrust marks each cwd as trusted in the session's .claude/.claude.json (projects[cwd].hasTrustDialogAccepted),
// so an interactive claude started in a known cwd does not stop at the trust dialog. Other keys are kept.
func SeedTrust(sess *layout.Dir, cwds []string) error {
	if len(cwds) == 0 {
		return nil
	}
	return mergeJSON(sess, stateFile, 0o600, func(m map[string]any) bool {
		projects, _ := m["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
			m["projects"] = projects
		}
		changed := false
		for _, cwd := range cwds {
			p, _ := projects[cwd].(map[string]any)
			if p == nil {
				p = map[string]any{}
				projects[cwd] = p
			}
			if p["hasTrustDialogAccepted"] != true {
				p["hasTrustDialogAccepted"] = true
				changed = true
			}
		}
		return changed
	})
}

// mergeJSON reads the JSON object rel beneath sess (absent means empty), lets edit change it, and writes it back
// atomically when edit reports a change. The session wrote the file and may be hostile: it is read only if it is
// a regular file of at most layout.MaxMetaSize bytes, never through a symlink nor blocking on a FIFO, and the
// new file replaces the name (never written through it) with the session folder's owner.
func mergeJSON(sess *layout.Dir, rel string, perm uint32, edit func(map[string]any) bool) error {
	m := map[string]any{}
	b, err := sess.ReadRegular(rel, layout.MaxMetaSize)
	switch {
	case err == nil && len(bytes.TrimSpace(b)) > 0:
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return fmt.Errorf("%s/%s is not a JSON object; left as it is", sess.Name(), rel)
		}
	case errors.Is(err, layout.ErrDamaged):
		return fmt.Errorf("%s/%s: %w; left as it is", sess.Name(), rel, err)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
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
	if err := sess.MkdirAll(layout.ClaudeDir, 0o755, uid, gid); err != nil {
		return err
	}
	return sess.WriteAtomic(rel, append(out, '\n'), perm, uid, gid)
}

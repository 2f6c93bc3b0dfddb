package claude

import (
	"github.com/sessionfs/sessionfs/agents"
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
	return agents.MergeJSON(sess, settingsFile, 0o644, func(m map[string]any) bool {
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
	return agents.MergeJSON(sess, stateFile, 0o600, func(m map[string]any) bool {
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

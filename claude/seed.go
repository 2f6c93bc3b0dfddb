package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// KeepTranscriptsDays is the cleanupPeriodDays seeded into a session: Claude Code deletes transcripts older than
// that at start-up, and a session must never lose one silently.
const KeepTranscriptsDays = 36500

// SeedSettings merges cleanupPeriodDays into configDir/settings.json, keeping every other setting. A value the
// user set larger is kept too. A settings.json that is not a JSON object is an error and is left untouched.
func SeedSettings(configDir string) error {
	return mergeJSON(filepath.Join(configDir, "settings.json"), func(m map[string]any) bool {
		if v, ok := m["cleanupPeriodDays"].(float64); ok && v >= KeepTranscriptsDays {
			return false
		}
		m["cleanupPeriodDays"] = KeepTranscriptsDays
		return true
	})
}

// SeedTrust marks each cwd as trusted in configDir/.claude.json (projects[cwd].hasTrustDialogAccepted), so an
// interactive claude started in a known cwd does not stop at the trust dialog. Other keys are kept.
func SeedTrust(configDir string, cwds []string) error {
	if len(cwds) == 0 {
		return nil
	}
	return mergeJSON(filepath.Join(configDir, ".claude.json"), func(m map[string]any) bool {
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

// mergeJSON reads a JSON object (absent means empty), lets edit change it, and writes it back atomically when edit
// reports a change.
func mergeJSON(path string, edit func(map[string]any) bool) error {
	m := map[string]any{}
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(bytes.TrimSpace(b)) > 0:
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return fmt.Errorf("%s is not a JSON object; left as it is", path)
		}
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
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return layout.WriteFileAtomic(path, append(out, '\n'), 0o600)
}

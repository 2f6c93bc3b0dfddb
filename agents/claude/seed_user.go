package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// Bounds on the user's files read to seed a session: a huge or hostile one is refused with a warning. A real
// ~/.claude.json grows with every project (its history), so it may be larger than settings.json; only a few of
// its keys are kept.
const (
	MaxUserSettings = 1 << 20
	MaxUserState    = 16 << 20
	// maxApproved bounds the custom API keys' approvals carried over (Claude keeps the last 20 characters of each).
	maxApproved = 256
)

// UserStateKeys are the keys of the user's ~/.claude.json a new session takes: what Claude Code checks at start
// to skip its onboarding, its release notes and its dialogs (the custom API key's approval among them), and the
// user's display choices. Nothing else is taken: never oauthAccount, userID, primaryApiKey, mcpServers (their
// env and headers may hold tokens) nor projects (other folders' history).
var UserStateKeys = []string{
	"hasCompletedOnboarding", "lastOnboardingVersion", "customApiKeyResponses", "lastReleaseNotesSeen",
	"theme", "editorMode", "verbose", "preferredNotifChannel", "autoCompactEnabled", "diffTool",
	"hasSeenTasksHint", "hasAcknowledgedCostThreshold", "hasIdeOnboardingBeenShown",
	"shiftEnterKeyBindingInstalled", "bypassPermissionsModeAccepted",
}

// UserState is what a new session takes from the user's own Claude Code (LoadUserState), so it starts as the
// user's Claude rather than a fresh install.
type UserState struct {
	// Settings are the keys of the user's ~/.claude/settings.json that run nothing and hold no credential
	// (inertSettings, and env's SafeEnv entries): never hooks, helpers, MCP servers, status lines, permissions,
	// headers, proxies nor URLs. A session's settings travel (exports, containers, other hosts) and a session that
	// holds no code needs no approval to start on this host (package trust).
	Settings map[string]json.RawMessage
	// State are the UserStateKeys of the user's ~/.claude.json.
	State map[string]json.RawMessage
}

// LoadUserState reads the Claude Code state of the user whose home is home: ~/.claude/settings.json and the
// UserStateKeys of ~/.claude.json (CLAUDE_CONFIG_DIR is not followed: it may name a session). A file missing is
// nothing; one that is not a regular file, past its bound or not a JSON object is left out with a warning.
// Credentials are never read: .credentials.json is not opened.
func LoadUserState(home string) (u *UserState, warnings []string) {
	u = &UserState{}
	p := filepath.Join(home, ".claude", "settings.json")
	settings, err := readUserJSON(p, MaxUserSettings)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	var left []string
	u.Settings, left = safeSettings(settings)
	if len(left) > 0 {
		warnings = append(warnings, fmt.Sprintf("not copied from %s (each runs a command, holds a credential or is unknown to sessionfs): %s", p, strings.Join(left, ", ")))
	}
	state, err := readUserJSON(filepath.Join(home, ".claude.json"), MaxUserState)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	for k, v := range state {
		if slices.Contains(UserStateKeys, k) {
			if u.State == nil {
				u.State = map[string]json.RawMessage{}
			}
			u.State[k] = v
		}
	}
	return u, warnings
}

// Empty reports whether there is nothing to seed.
func (u *UserState) Empty() bool { return u == nil || len(u.Settings) == 0 && len(u.State) == 0 }

// readUserJSON reads the JSON object at p, at most limit bytes, a regular file only, never blocking on a FIFO.
// A missing file is no object and no error.
func readUserJSON(p string, limit int64) (map[string]json.RawMessage, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s left out: %v", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s left out: %v", p, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s left out: not a regular file", p)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s left out: %d bytes, more than the %d read", p, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s left out: %v", p, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s left out: more than the %d bytes read", p, limit)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s left out: not a JSON object", p)
	}
	return m, nil
}

// safeSettings are the keys of settings that a session may take (inertSettings, and env's SafeEnv entries), and
// the names of what it may not, sorted.
func safeSettings(settings map[string]json.RawMessage) (safe map[string]json.RawMessage, left []string) {
	for k, raw := range settings {
		switch {
		case k == "env":
			env, dropped := safeEnv(raw)
			left = append(left, dropped...)
			if env != nil {
				safe = setRaw(safe, k, env)
			}
		case slices.Contains(inertSettings, k):
			safe = setRaw(safe, k, raw)
		default:
			left = append(left, plainName(k))
		}
	}
	slices.Sort(left)
	return safe, left
}

// safeEnv is settings.json's env with only its SafeEnv entries (nil when none is left), and the names of the others
// ("env FOO").
func safeEnv(env json.RawMessage) (json.RawMessage, []string) {
	var m map[string]any
	if json.Unmarshal(env, &m) != nil || m == nil {
		return nil, []string{"env"}
	}
	var left []string
	for k, v := range m {
		if !agents.SafeEnv(k, v) {
			left = append(left, "env "+plainName(k))
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil, left
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, append(left, "env")
	}
	return b, left
}

func setRaw(m map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[k] = v
	return m
}

// SeedUser merges u into the session open as sess, under what the session holds: a key of the user's settings.json
// or of the UserStateKeys is written only where the session's file has none (a profile's settings and
// sessionfs's own seeds, SeedSettings, win). The custom API keys the user approved are added to the session's
// approvals, so a key approved once is not asked again. Files that are not JSON objects are left untouched (an
// error).
func SeedUser(sess *layout.Dir, u *UserState) error {
	if u.Empty() {
		return nil
	}
	var errs []error
	if len(u.Settings) > 0 {
		errs = append(errs, agents.MergeJSON(sess, settingsFile, 0o644, func(m map[string]any) bool {
			return fillAbsent(m, u.Settings)
		}))
	}
	if len(u.State) > 0 {
		errs = append(errs, agents.MergeJSON(sess, stateFile, 0o600, func(m map[string]any) bool {
			changed := addApprovals(m, u.State["customApiKeyResponses"])
			return fillAbsent(m, u.State) || changed
		}))
	}
	return errors.Join(errs...)
}

// fillAbsent sets in m each key of from that m lacks; it reports whether it set any.
func fillAbsent(m map[string]any, from map[string]json.RawMessage) bool {
	changed := false
	for k, raw := range from {
		if _, ok := m[k]; ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		m[k] = v
		changed = true
	}
	return changed
}

// addApprovals adds to m's customApiKeyResponses.approved the user's approved keys the session neither approved
// nor rejected. A session without customApiKeyResponses gets the user's whole (fillAbsent).
func addApprovals(m map[string]any, raw json.RawMessage) bool {
	cur, ok := m["customApiKeyResponses"].(map[string]any)
	if !ok || raw == nil {
		return false
	}
	var user struct {
		Approved []any `json:"approved"`
	}
	if json.Unmarshal(raw, &user) != nil {
		return false
	}
	approved, _ := cur["approved"].([]any)
	rejected, _ := cur["rejected"].([]any)
	changed := false
	for _, k := range user.Approved {
		if s, ok := k.(string); !ok || len(approved) >= maxApproved || slices.Contains(approved, k) || slices.Contains(rejected, k) || s == "" {
			continue
		}
		approved = append(approved, k)
		changed = true
	}
	if changed {
		cur["approved"] = approved
	}
	return changed
}

// plainName is k as a message may show it: as it is when it is a plain variable name, quoted otherwise.
func plainName(k string) string {
	for _, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return strconv.QuoteToASCII(k)
		}
	}
	return k
}

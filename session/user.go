package session

import (
	"fmt"
	"os"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// NoUserSettingsEnv set (to anything but "" or "0") stops new sessions from taking the user's Claude state, as
// `new --no-user-settings` does, for the callers that have no such flag.
const NoUserSettingsEnv = "SESSIONFS_NO_USER_SETTINGS"

// UserClaude is the Claude state of the user who runs this process (claude.LoadUserState of $HOME), for a new
// session to start as the user's Claude: nil when NoUserSettingsEnv opts out or there is no home. What could not
// be read is a warning, returned.
func UserClaude() (*claude.UserState, []string) {
	if v := os.Getenv(NoUserSettingsEnv); v != "" && v != "0" {
		return nil, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, nil
	}
	return claude.LoadUserState(home)
}

// seedUser merges opts.User into session id's .claude; what fails is only a warning: the session still starts,
// as a fresh install.
func seedUser(s *layout.Store, id string, opts Options) {
	if opts.User.Empty() {
		return
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		warn(fmt.Sprintf("your Claude settings were not copied: %v", err))
		return
	}
	defer sess.Close()
	if err := claude.SeedUser(sess, opts.User); err != nil {
		warn(fmt.Sprintf("your Claude settings were not all copied: %v", err))
	}
}

package session

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// ShareCredentials links session id's .claude/.credentials.json to the user's, so a session is not a new login.
// A link rather than a copy: a refreshed token is seen by every session at once. The link is made beneath the
// session's folder fd, owned like the session. A login the user has not made yet is a warning, returned: the
// link works once it is made.
func ShareCredentials(s *layout.Store, id string) (warnings []string, err error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(home, ".claude", ".credentials.json")
	if _, err := os.Stat(src); err != nil {
		warnings = append(warnings, fmt.Sprintf("%s does not exist yet (log in with claude once); the link will work when it does", src))
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return warnings, err
	}
	defer sess.Close()
	uid, gid, err := sess.Owner()
	if err != nil {
		return warnings, err
	}
	return warnings, sess.Symlink(src, layout.ClaudeDir+"/.credentials.json", uid, gid)
}

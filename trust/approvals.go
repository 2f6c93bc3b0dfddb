package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// Approvals are one user's approvals of sessions' code: a file for each session, in a folder of the user's own
// (0700) that no session's process reaches: ~/.config/sessionfs/approved of the user's home as the system's user
// database names it, or $SESSIONFS_APPROVALS. Neither $XDG_CONFIG_HOME nor $HOME is taken: a shell pointed at a
// session (sessionfs env --agent opencode sets XDG_CONFIG_HOME to a folder of the session's) would keep its
// approvals where the session writes them.
type Approvals struct {
	Dir string
}

// EnvApprovals names the approvals' folder instead (tests, a user who keeps them elsewhere).
const EnvApprovals = "SESSIONFS_APPROVALS"

// UserApprovals are the approvals of the user running this process.
func UserApprovals() (Approvals, error) {
	if dir := os.Getenv(EnvApprovals); dir != "" {
		return Approvals{Dir: dir}, nil
	}
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || u.HomeDir == "" {
		return Approvals{}, fmt.Errorf("no home folder to keep approvals in (the user database has none for uid %d; set %s)", os.Getuid(), EnvApprovals)
	}
	return Approvals{Dir: filepath.Join(u.HomeDir, ".config", "sessionfs", "approved")}, nil
}

// Record is the approval of one session's code: the sum of each piece the user accepted, by path.
type Record struct {
	Store    string            `json:"store"`
	Session  string            `json:"session"`
	Approved time.Time         `json:"approved"`
	Sums     map[string]string `json:"sums"`
}

// maxRecord bounds an approval file: a few hundred lines, never more.
const maxRecord = 1 << 20

// file is the approval of session id in the store at root: named by a hash of both, so a session of the same name
// in another store, or made anew after a removal with other code, is not approved by it.
func (a Approvals) file(root, id string) string {
	h := sha256.Sum256([]byte(root + "\x00" + id))
	return filepath.Join(a.Dir, hex.EncodeToString(h[:16])+".json")
}

// Get is session id's approval in the store at root; an empty Record when there is none.
func (a Approvals) Get(root, id string) (Record, error) {
	f, err := os.Open(a.file(root, id))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, nil
	} else if err != nil {
		return Record{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Store != root || r.Session != id {
		return Record{}, fmt.Errorf("%s: not an approval of session %s; remove it and approve again", a.file(root, id), id)
	}
	return r, nil
}

// Approve records the user's approval of c, the code of session id in the store at root, as it was shown: the
// pieces read once, shown, and recorded, so a change made meanwhile is not approved. Pieces that cannot be
// approved are refused.
func (a Approvals) Approve(root, id string, c Code) error {
	r := Record{Store: root, Session: id, Approved: time.Now().UTC(), Sums: map[string]string{}}
	for _, p := range c.Pieces {
		if p.Problem != "" {
			return fmt.Errorf("%s cannot be approved: %s", p.Path, p.Problem)
		}
		r.Sums[p.Path] = p.Sum
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(a.Dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(a.Dir, ".approval-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), a.file(root, id))
}

// Revoke removes session id's approval; none is no error.
func (a Approvals) Revoke(root, id string) error {
	err := os.Remove(a.file(root, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Shared credentials. `new --share-credentials` links the session's .claude/.credentials.json to the user's file
// (its absolute path on the host: a local run follows it; a refreshed token is seen by every session at once),
// and records the sharing in the store, beyond the session's reach: <root>/shared-credentials/<id>. A run in a
// container reads the record (SharedCredentials), never the link nor session.json, which the session's processes
// rewrite at will: a session that planted such a link itself must not be handed the user's login. The record
// names the session folder it was made for (device, inode, birth), so a later session at the same id inherits
// nothing; Create clears it too.
const (
	credsRecords   = "shared-credentials"
	maxCredsRecord = 4096
)

// credsRecord is what the store records of a session sharing the user's credentials.
type credsRecord struct {
	Path string `json:"path"` // the user's .credentials.json on the host
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Born int64  `json:"born"` // the session folder's birth (its ctime where the filesystem has no birth), ns
}

// ShareCredentials links session id's .claude/.credentials.json to the user's, so a session is not a new login,
// and records the sharing in the store for runs in containers (SharedCredentials). The link is made beneath the
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
	link := layout.ClaudeDir + "/.credentials.json"
	if cur, err := sess.Readlink(link); err != nil || cur != src { // the same link again is no error
		if err := sess.Symlink(src, link, uid, gid); err != nil {
			return warnings, err
		}
	}
	rec, err := identity(sess)
	if err != nil {
		return warnings, err
	}
	rec.Path = src
	b, err := json.Marshal(rec)
	if err != nil {
		return warnings, err
	}
	root, err := layout.OpenDir(s.Root)
	if err != nil {
		return warnings, err
	}
	defer root.Close()
	if err := root.MkdirAll(credsRecords, 0o700, -1, -1); err != nil {
		return warnings, err
	}
	return warnings, root.WriteAtomic(credsRecords+"/"+id, append(b, '\n'), 0o600, -1, -1)
}

// SharedCredentials is the user's credentials file that session id shares (ShareCredentials), "" when it shares
// none: no record, or a record made for another session once at that id. A record that is not a regular file of
// ours is ErrDamaged, never followed.
func SharedCredentials(s *layout.Store, id string) (string, error) {
	if err := layout.ValidateID(id); err != nil {
		return "", err
	}
	root, err := layout.OpenDir(s.Root)
	if err != nil {
		return "", err
	}
	defer root.Close()
	b, err := root.ReadRegular(credsRecords+"/"+id, maxCredsRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var rec credsRecord
	if err := json.Unmarshal(b, &rec); err != nil || !filepath.IsAbs(rec.Path) {
		return "", fmt.Errorf("%s/%s/%s: %w", s.Root, credsRecords, id, layout.ErrDamaged)
	}
	sess, err := s.OpenSession(id)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	cur, err := identity(sess)
	if err != nil {
		return "", err
	}
	if cur.Dev != rec.Dev || cur.Ino != rec.Ino || cur.Born != rec.Born {
		return "", nil
	}
	return rec.Path, nil
}

// clearSharedCredentials removes the record at id, left by a session that was there before: a new session
// shares nothing it was not asked to.
func clearSharedCredentials(s *layout.Store, id string) {
	root, err := layout.OpenDir(s.Root)
	if err != nil {
		return
	}
	defer root.Close()
	_ = root.Remove(credsRecords + "/" + id)
}

// identity names the session folder open as sess: its device, inode and birth.
func identity(sess *layout.Dir) (credsRecord, error) {
	var st unix.Statx_t
	if err := unix.Statx(sess.Fd(), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_CTIME, &st); err != nil {
		return credsRecord{}, err
	}
	t := st.Ctime
	if st.Mask&unix.STATX_BTIME != 0 {
		t = st.Btime
	}
	return credsRecord{Dev: unix.Mkdev(st.Dev_major, st.Dev_minor), Ino: st.Ino, Born: t.Sec*1e9 + int64(t.Nsec)}, nil
}

// CredentialsFor is what a run on backend must do for session id's shared credentials (SharedCredentials): the
// file to bind read-only into a docker container, at the path the session's link leads to; nothing for a local
// run (the link leads there); for Modal, nothing and a warning: the login is not copied into a Sandbox, where it
// would leave this machine and stay on the session's Volume.
func CredentialsFor(s *layout.Store, id, backend string) (bind string, warnings []string) {
	if backend != "docker" && backend != "modal" {
		return "", nil
	}
	src, err := SharedCredentials(s, id)
	if errors.Is(err, fs.ErrPermission) {
		return "", nil // a store whose records this user cannot read: its sessions share nothing of this user's
	}
	if err != nil {
		return "", []string{fmt.Sprintf("shared credentials: %v", err)}
	}
	if src == "" {
		return "", nil
	}
	switch backend {
	case "docker":
		var st syscall.Stat_t
		if err := syscall.Stat(src, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return "", []string{fmt.Sprintf("the session shares %s, which is not a file here (log in with claude once): the container starts without a login", src)}
		}
		if src == layout.ContainerRoot || strings.HasPrefix(src, layout.ContainerRoot+"/") {
			return "", []string{fmt.Sprintf("the session shares %s, beneath the container's %s: not bound", src, layout.ContainerRoot)}
		}
		return src, nil
	case "modal":
		return "", []string{"the session shares your Claude login (new --share-credentials), which is not copied into a Modal Sandbox: " +
			"log in there (claude /login) or pass an API key (-e ANTHROPIC_API_KEY)"}
	}
	return "", nil
}

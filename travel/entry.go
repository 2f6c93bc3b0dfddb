package travel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/layout"
)

// Counts is how far an export, import or fork has got.
type Counts struct {
	Files int   `json:"files"` // entries of every kind: files, folders, links
	Bytes int64 `json:"bytes"` // file content
}

// walked is an entry of a session met by a walk, with its lstat.
type walked struct {
	rel string
	st  unix.Stat_t
}

// credentialFiles are the known places of credentials in a session, as (folder, file name) anywhere in it: the
// agents' logins (their Credentials) and the usual tools' tokens. They are left out of an export unless asked for.
var credentialFiles = append(agentCredentials(), []credential{
	{".aws", "credentials"},
	{".docker", "config.json"},
	{"gh", "hosts.yml"},      // GitHub CLI (.config/gh)
	{"", ".git-credentials"}, // git's store helper
	{"", ".netrc"},
	{"", ".pypirc"},
	{"", ".npmrc"}, // may hold an auth token
}...)

// credential is a file name ("*": every file), in a folder of that name or path ("" for any):
// ".opencode/data/opencode" matches the end of the file's folder.
type credential struct{ dir, name string }

// secretOf finds the agent file at rel (a path in a session) that holds credentials among other state, and
// whether rel is that file itself or one beside it (a sidecar, left out with it).
func secretOf(rel string) (s agents.Secret, sidecar, ok bool) {
	for _, a := range all.Agents {
		for _, sec := range a.Secrets {
			p := path.Join(a.Dir, sec.Name)
			if rel == p {
				return sec, false, true
			}
			for _, suffix := range sec.Sidecars {
				if rel == p+suffix {
					return sec, true, true
				}
			}
		}
	}
	return agents.Secret{}, false, false
}

func agentCredentials() []credential {
	var out []credential
	for _, a := range all.Agents {
		for _, name := range a.Credentials { // a name may lie below the agent's folder: data/opencode/auth.json
			out = append(out, credential{path.Join(a.Dir, path.Dir(name)), path.Base(name)})
		}
	}
	return out
}

// stateKeys are the credentials Claude Code may keep in its state file (.claude.json) beside settings a session
// needs (trust, onboarding): an export drops these keys from the file, not the file.
var stateKeys = []string{"primaryApiKey"}

// isStateFile reports whether rel is Claude Code's state file.
func isStateFile(rel string) bool { return path.Base(rel) == ".claude.json" }

// withoutCredentials returns the state file data without its credential keys, and the keys it dropped; data
// that is not a JSON object is returned as it is.
func withoutCredentials(data []byte) ([]byte, []string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data, nil
	}
	var dropped []string
	for _, k := range stateKeys {
		if _, ok := m[k]; ok {
			delete(m, k)
			dropped = append(dropped, k)
		}
	}
	if dropped == nil {
		return data, nil
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return data, nil
	}
	return append(out, '\n'), dropped
}

// sshKeys are private key names under .ssh/.
var sshKeys = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}

// IsCredential reports whether rel (a path in a session) is a known place of credentials.
func IsCredential(rel string) bool {
	dir, name := path.Split(rel)
	parent := path.Base(strings.TrimSuffix(dir, "/"))
	if dir == "" {
		parent = ""
	}
	folder := "/" + strings.TrimSuffix(dir, "/")
	for _, c := range credentialFiles {
		if (name == c.name || c.name == "*") && (c.dir == "" || parent == c.dir || strings.Contains(c.dir, "/") && strings.HasSuffix(folder, "/"+c.dir)) {
			return true
		}
	}
	if parent == ".ssh" {
		for _, k := range sshKeys {
			if name == k {
				return true
			}
		}
	}
	return false
}

// LinkInside reports whether a symlink at rel (a path in the session) pointing to target leads to a place inside
// the session: a relative target that does not climb out of the session folder, or an absolute one under
// /session, where every runtime sessionfs starts sees the session. Nothing in sessionfs follows a session's
// links; this keeps an archive from planting a link that a person or a tool would follow out of the session.
func LinkInside(rel, target string) bool {
	if target == "" || strings.ContainsRune(target, 0) {
		return false
	}
	if path.IsAbs(target) {
		c := path.Clean(target)
		return c == layout.ContainerRoot || strings.HasPrefix(c, layout.ContainerRoot+"/")
	}
	j := path.Join(path.Dir(rel), target)
	return j != ".." && !strings.HasPrefix(j, "../")
}

// isTranscript reports whether rel is a JSONL file of an agent's folder (Claude's transcripts and their
// subagents', Codex's rollouts, Qwen's chats...): one whose writer may be mid-line while we copy it.
func isTranscript(rel string) bool {
	if !strings.HasSuffix(rel, ".jsonl") {
		return false
	}
	top, _, _ := strings.Cut(rel, "/")
	return all.ByDir(top) != nil
}

// wholeLines returns the length of the first size bytes of f up to and including their last newline: a
// transcript copied that far never ends in half a line its writer had not finished.
func wholeLines(f *os.File, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == end-start) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// userXattrs reads the user.* extended attributes of the open file fd. Other namespaces (security.*,
// trusted.*, system.*) are never carried: restoring a file capability or an ACL made elsewhere would give a
// session's file powers its owner did not grant here.
func userXattrs(fd int) map[string]string {
	size, err := unix.Flistxattr(fd, nil)
	if err != nil || size <= 0 {
		return nil
	}
	buf := make([]byte, size)
	if size, err = unix.Flistxattr(fd, buf); err != nil {
		return nil
	}
	var out map[string]string
	for _, name := range strings.Split(string(buf[:size]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		n, err := unix.Fgetxattr(fd, name, nil)
		if err != nil || n < 0 || n > maxXattrSize {
			continue
		}
		v := make([]byte, n)
		if n, err = unix.Fgetxattr(fd, name, v); err != nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = string(v[:n])
	}
	return out
}

// maxXattrSize is the largest value Linux keeps (XATTR_SIZE_MAX).
const maxXattrSize = 64 << 10

// setUserXattrs sets the user.* attributes of xattrs on fd, best effort: a filesystem without user xattrs
// keeps the file without them.
func setUserXattrs(fd int, xattrs map[string]string) {
	for name, v := range xattrs {
		if strings.HasPrefix(name, "user.") && len(v) <= maxXattrSize {
			_ = unix.Fsetxattr(fd, name, []byte(v), 0)
		}
	}
}

// HoldsCredentials reports whether rel (a path in a session) holds credentials, alone or among other state: a
// known credential file (IsCredential), Claude Code's state file (which may keep an API key), or an agent's file
// of secrets and its sidecars. What export scrubs or leaves out, a sync leaves where it is.
func HoldsCredentials(rel string) bool {
	if IsCredential(rel) || isStateFile(rel) {
		return true
	}
	_, _, ok := secretOf(rel)
	return ok
}

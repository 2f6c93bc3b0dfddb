package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLsAsksNoLabelPerFile: ls -l asks every file's SELinux label, a FUSE request per file that the kernel caches
// for no FUSE file system. The mount answers that it keeps no labels (EOPNOTSUPP), which ls takes for the whole
// mount: a warm ls -lR of a .claude of 30 files asks the label once, not once per file. A user attribute and an ACL
// still go through to the store, and ls still shows the ACL.
func TestLsAsksNoLabelPerFile(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	dir := filepath.Join(store, "sessions", "s1", ".claude", "todos")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for i := range 30 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "t"+strings.Repeat("x", i)+".json"), []byte("[]"), 0o600))
	}
	m := mount(t, store, "--debug")
	claude := filepath.Join(m.session("s1"), ".claude")
	f := filepath.Join(claude, "todos", "t.json")

	_, err := unix.Lgetxattr(f, "security.selinux", make([]byte, 256))
	assert.ErrorIs(t, err, syscall.EOPNOTSUPP, "no labels kept")
	require.NoError(t, unix.Setxattr(f, "user.origin", []byte("s1"), 0))
	v := make([]byte, 16)
	n, err := unix.Getxattr(filepath.Join(dir, "t.json"), "user.origin", v)
	require.NoError(t, err, "a user attribute set through the mount is the store file's")
	assert.Equal(t, "s1", string(v[:n]))
	require.NoError(t, unix.Setxattr(f, "system.posix_acl_access", aclGranting(65534), 0))
	n, err = unix.Getxattr(filepath.Join(dir, "t.json"), "system.posix_acl_access", make([]byte, 128))
	require.NoError(t, err, "the ACL set through the mount is the store file's")
	assert.Equal(t, len(aclGranting(65534)), n)

	ls := func() string {
		out, err := exec.Command("ls", "-lR", claude).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	// logged is the debug log once every request made before it was logged: a lookup of a name of its own,
	// received after them, is.
	marks := 0
	logged := func() string {
		marks++
		mark := fmt.Sprintf("mark-%d", marks)
		_, _ = os.Stat(filepath.Join(claude, mark))
		eventually(t, 5*time.Second, func() bool { return strings.Contains(m.log.String(), mark) }, "%s logged", mark)
		return m.log.String()
	}
	ls() // cold: names and attributes
	before := strings.Count(logged(), "GETXATTR")
	out := ls()
	asked := strings.Count(logged(), "GETXATTR") - before
	t.Logf("a warm ls -lR of 30 files sent %d GETXATTR", asked)
	// The label once, and a folder's ACLs the kernel had not cached yet; before, each of the 30 files' label.
	assert.LessOrEqual(t, asked, 5, "labels asked once per ls, not per file")
	assert.Regexp(t, `-rw-r-----\+ .* t\.json`, out, "the ACL shown")
}

// aclGranting is a POSIX ACL (the kernel's xattr form) of owner rw, uid read, group none, mask read, other none.
func aclGranting(uid uint32) []byte {
	const (
		userObj  = 0x01
		user     = 0x02
		groupObj = 0x04
		mask     = 0x10
		other    = 0x20
		none     = ^uint32(0)
	)
	entries := []struct {
		tag  uint16
		perm uint16
		id   uint32
	}{{userObj, 6, none}, {user, 4, uid}, {groupObj, 0, none}, {mask, 4, none}, {other, 0, none}}
	b := binary.LittleEndian.AppendUint32(nil, 2) // version
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

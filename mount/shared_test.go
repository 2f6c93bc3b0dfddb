package mount

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSharedFUSEMount(t *testing.T) {
	for _, c := range []struct {
		fstype, source string
		shared         bool
	}{
		{"fuse.juicefs", "JuiceFS:vol", true},
		{"fuse", "mfs#192.0.2.1:9421", true}, // MooseFS sets no subtype
		{"fuse.ceph-fuse", "ceph-fuse", true},
		{"fuse.glusterfs", "host:/vol", true},
		{"fuse.sshfs", "u@h:/x", true},
		{"fuse.sessionfs", "/store", false},
		{"fuse.bindfs", "/x", false},
		{"fuse", "something", false},
		{"fuse.rclone", "remote:", true},
	} {
		_, shared := sharedFUSEMount(c.fstype, c.source)
		assert.Equal(t, c.shared, shared, "%s %s", c.fstype, c.source)
	}
	name, _ := sharedFUSEMount("fuse", "mfs#192.0.2.1:9421")
	assert.Equal(t, "fuse (mfs)", name)
}

func TestSharedStoreLocalIsNot(t *testing.T) {
	fstype, shared := SharedStore(t.TempDir())
	assert.False(t, shared, fstype)
	_, shared = SharedStore("/no/such/folder")
	assert.False(t, shared)
	m := mountOf(t.TempDir())
	if assert.NotNil(t, m) {
		assert.NotEmpty(t, m.Mountpoint)
	}
}

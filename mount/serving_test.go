package mount

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A /dev/fuse descriptor's fdinfo names its connection by the kernel's own device number (12 bits of major above
// 20 of minor), which is what the mount table's major:minor is compared with.
func TestFuseConnectionOfFdinfo(t *testing.T) {
	assert.Equal(t, int64(39), fuseConnection("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t90\nfuse_connection:\t39\n"))
	assert.Equal(t, int64(-1), fuseConnection("pos:\t0\nflags:\t02100002\nmnt_id:\t24\n"), "a kernel before 6.16, or a descriptor not yet mounted")
	assert.Equal(t, int64(-1), fuseConnection("fuse_connection:\tx\n"))
	assert.Equal(t, uint64(39), kernelDev(0, 39))
	assert.Equal(t, uint64(1<<20|2), kernelDev(1, 2))
}

func TestServingPIDOfNoMount(t *testing.T) {
	_, err := ServingPID(t.TempDir())
	assert.ErrorContains(t, err, "is not in the mount table")
}

package takeover

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
)

// No daemon takes over where the kernel could not resend what the dead one had read (before Linux 6.9): those
// requests would wait for good, so the connection ends and its users get an error, as without a holder.
func TestNoTakeoverWithoutResend(t *testing.T) {
	h := &Holder{}
	assert.ErrorContains(t, h.cannotTakeOver(), "before it initialized")
	h.init = &fuse.InitIn{Major: 7, Minor: 39, Flags: uint32(fuse.CAP_ASYNC_READ)}
	assert.ErrorContains(t, h.cannotTakeOver(), "FUSE_NOTIFY_RESEND")
	resend := uint64(fuse.CAP_HAS_RESEND)
	h.init = &fuse.InitIn{Major: 7, Minor: 41, Flags: uint32(fuse.CAP_ASYNC_READ), Flags2: uint32(resend >> 32)}
	assert.NoError(t, h.cannotTakeOver())
	h.failures = maxFailedTakeovers
	assert.ErrorContains(t, h.cannotTakeOver(), "in a row")
}

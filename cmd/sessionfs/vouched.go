package main

import (
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
)

// vouchWait is how long ls and find wait for a mount of their store to say which sessions it vouches for before
// they stat every session themselves (a mount that answers takes about a millisecond).
const vouchWait = 250 * time.Millisecond

// useMountsWatch lets s's index take a running mount's word for the sessions its watch saw unchanged
// (mount.VouchedIndex), instead of stat-ing their names: most of what ls and find take on 10,000 sessions.
func useMountsWatch(s *layout.Store) {
	if b, ok := mount.VouchedIndex(s.Root, vouchWait); ok {
		s.Vouched = layout.ParseVouched(b)
	}
}

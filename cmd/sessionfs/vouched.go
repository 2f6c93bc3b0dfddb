package main

import (
	"sync"
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
)

// vouchWait is how long ls and find wait for a mount of their store to say which sessions it vouches for before
// they stat every session themselves (a mount that answers takes about a millisecond).
const vouchWait = 250 * time.Millisecond

// useMountsWatch lets s's index take a running mount's word for the sessions its watch saw unchanged
// (mount.VouchedIndex), instead of stat-ing their names: most of what ls and find take on 10,000 sessions.
// The mount is asked once, while the index and the sessions folder are read.
func useMountsWatch(s *layout.Store) {
	s.Vouched = sync.OnceValue(func() map[string]string {
		if b, ok := mount.VouchedIndex(s.Root, vouchWait); ok {
			return layout.ParseVouched(b)
		}
		return nil
	})
}

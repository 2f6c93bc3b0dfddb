package mount

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/nodes"
)

// maxVouched bounds what a reader takes of a mount's nodes.IndexFile (10,000 sessions make 0.5 MiB).
const maxVouched = 64 << 20

// vouchedRead is what a reader of nodes.IndexFile reads into at first: its size says 0 (made when opened), and
// growing from io.ReadAll's 512 bytes to 10,000 sessions' 0.4 MiB took 7 ms of find's 70. Made with make, not
// Buffer.Grow, which zeroes all of it: fresh memory is zero already, and only the pages read into are touched.
const vouchedRead = 1 << 20

// readVouched reads f whole, at most maxVouched bytes; nil on an error.
func readVouched(f io.Reader) []byte {
	b := bytes.NewBuffer(make([]byte, 0, vouchedRead))
	if _, err := b.ReadFrom(io.LimitReader(f, maxVouched)); err != nil {
		return nil
	}
	return b.Bytes()
}

// VouchedIndex reads what a live mount of storeRoot vouches for (nodes.IndexFile, for layout.ParseVouched),
// waiting at most wait for it: a mount whose daemon hangs costs its reader that wait, never more. Only a mount
// this user or root made is asked (any user may mount a FUSE filesystem naming this store as its source).
func VouchedIndex(storeRoot string, wait time.Duration) ([]byte, bool) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.FSType != FSType || m.Source != storeRoot, false
	})
	if err != nil {
		return nil, false
	}
	deadline := time.After(wait)
	for _, m := range mounts {
		if owner := inspect.MountOwner(m.VFSOptions); owner != 0 && int(owner) != os.Geteuid() {
			continue
		}
		got := make(chan []byte, 1) // a reader left hanging on a hung mount writes here, to no one, and ends with the process
		go func() {
			f, err := os.Open(filepath.Join(m.Mountpoint, nodes.IndexFile))
			if err != nil {
				got <- nil
				return
			}
			defer f.Close()
			got <- readVouched(f)
		}()
		select {
		case b := <-got:
			if b != nil {
				return b, true
			}
		case <-deadline:
			return nil, false
		}
	}
	return nil, false
}

package mount

import (
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
			b, err := io.ReadAll(io.LimitReader(f, maxVouched))
			if err != nil {
				b = nil
			}
			got <- b
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

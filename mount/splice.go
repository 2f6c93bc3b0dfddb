package mount

import "github.com/hanwen/go-fuse/v2/splice"

// openSpliceSink has go-fuse open /dev/null, where it empties the pipes it splices reads through, while this
// process may still open it: go-fuse opens it at its first splice, and confined (Landlock: only the store) that
// open fails and go-fuse panics, which ended the mount at its first read served without passthrough (a store on
// overlayfs, which the kernel does not stack passthrough on).
func openSpliceSink() {
	if p, err := splice.Get(); err == nil {
		splice.Done(p) // empties the pipe into /dev/null, opened now and kept
	}
}

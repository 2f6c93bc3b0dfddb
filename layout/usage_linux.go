package layout

import (
	"io/fs"
	"syscall"
)

// diskBytes is what du counts: allocated blocks, not the apparent size, so sparse files are not overstated.
func diskBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

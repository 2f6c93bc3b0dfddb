package mount

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFuseReaders(t *testing.T) {
	assert.Equal(t, 3, fuseReaders(1), "go-fuse runs at least 2 readers, and one more may wait")
	assert.Equal(t, 3, fuseReaders(2))
	assert.Equal(t, 9, fuseReaders(8))
	assert.Equal(t, 17, fuseReaders(64), "go-fuse caps its readers at 16")
}

func TestSpareProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(2)
	assert.Equal(t, 4, spareProcs(2), "three readers may wait: a fourth P stays free")
	assert.Equal(t, 4, runtime.GOMAXPROCS(0))
	assert.Equal(t, 0, spareProcs(2), "already enough")

	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "2")
	assert.Equal(t, 0, spareProcs(2), "the user's GOMAXPROCS is kept")
	assert.Equal(t, 2, runtime.GOMAXPROCS(0))
}

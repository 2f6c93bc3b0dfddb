package nodes

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteRangesTrackWhatIsHeld(t *testing.T) {
	const eof = 1<<63 - 1 // FUSE's end of a lock to the end of the file
	var r byteRanges
	r.add(10, 19)
	r.add(30, 39)
	assert.Equal(t, byteRanges{{10, 19}, {30, 39}}, r)
	r.add(20, 29)
	assert.Equal(t, byteRanges{{10, 39}}, r, "adjacent ranges merge")
	r.add(0, 4)
	r.add(50, eof)
	assert.Equal(t, byteRanges{{0, 4}, {10, 39}, {50, eof}}, r)
	r.remove(15, 34)
	assert.Equal(t, byteRanges{{0, 4}, {10, 14}, {35, 39}, {50, eof}}, r, "an unlock splits a range")
	r.remove(60, eof)
	assert.Equal(t, byteRanges{{0, 4}, {10, 14}, {35, 39}, {50, 59}}, r)
	r.remove(5, 9)
	assert.Len(t, r, 4, "freeing what is not held changes nothing")
	r.add(3, 52)
	assert.Equal(t, byteRanges{{0, 59}}, r)
	r.remove(0, eof)
	assert.True(t, r.empty())

	r.add(^uint64(0), ^uint64(0))
	r.add(0, 0)
	assert.Equal(t, byteRanges{{0, 0}, {^uint64(0), ^uint64(0)}}, r, "no overflow at the ends")
	r.remove(0, ^uint64(0))
	assert.True(t, r.empty())
	r.add(5, 4)
	assert.True(t, r.empty(), "an empty range holds nothing")
}

// One owner read-locking every other byte of a file gets maxRangesPerOwner ranges, then ENOLCK; locks that merge
// with what it holds, and unlocks of whole ranges, are still taken, and an unlock that would split a range past
// the cap is refused.
func TestRangesPerOwnerBounded(t *testing.T) {
	tbl := &lockTable{}
	f := request(t, tbl, filepath.Join(t.TempDir(), "f"), syscall.O_RDWR)
	p := payer{"s", 65534}
	const tries = 20000
	refused := 0
	for i := uint64(0); i < tries; i++ {
		switch errno := tbl.setPosix(f, 1, p, posixLock(syscall.F_RDLCK, 2*i, 2*i)); errno {
		case 0:
		case syscall.ENOLCK:
			refused++
		default:
			t.Fatalf("lock %d: %v", i, errno)
		}
	}
	t.Logf("%d alternating ranges asked by one owner: %d refused", tries, refused)
	assert.Equal(t, tries-maxRangesPerOwner, refused)
	held := func() byteRanges {
		tbl.mu.Lock()
		defer tbl.mu.Unlock()
		for _, of := range tbl.owners {
			return slices.Clone(of[1].held)
		}
		return nil
	}
	assert.Len(t, held(), maxRangesPerOwner)
	assert.Equal(t, byteRange{2 * (maxRangesPerOwner - 1), 2 * (maxRangesPerOwner - 1)}, held()[maxRangesPerOwner-1])

	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_RDLCK, 1, 1)), "a lock joining two ranges is taken")
	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_RDLCK, 5000, 5000)), "and so is one more, below the cap again")
	assert.Equal(t, syscall.ENOLCK, tbl.setPosix(f, 1, p, posixLock(syscall.F_UNLCK, 1, 1)),
		"an unlock splitting a range past the cap")
	assert.Len(t, held(), maxRangesPerOwner)
	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_UNLCK, 10, 10)), "an unlock of a whole range")
	var out fuse.FileLock
	require.Zero(t, tbl.getPosix(f, 2, posixLock(syscall.F_WRLCK, 10, 10), &out))
	assert.Equal(t, uint32(syscall.F_UNLCK), out.Typ, "byte 10 is free in the kernel too")
	require.Zero(t, tbl.getPosix(f, 2, posixLock(syscall.F_WRLCK, 12, 12), &out))
	assert.Equal(t, uint32(syscall.F_RDLCK), out.Typ, "byte 12 is held in the kernel")
	require.Zero(t, tbl.getPosix(f, 2, posixLock(syscall.F_WRLCK, 2*tries-2, 2*tries-2), &out))
	assert.Equal(t, uint32(syscall.F_UNLCK), out.Typ, "a refused lock was not taken in the kernel")

	require.Zero(t, tbl.setPosix(f, 1, p, posixLock(syscall.F_UNLCK, 0, 1<<63-1)))
	assert.Empty(t, tbl.owners, "all freed, the owner's descriptor is closed")
}

// The ranges stay sorted, apart and not adjacent whatever order they come in.
func TestByteRangesStayOrdered(t *testing.T) {
	var r byteRanges
	for _, i := range []uint64{9, 1, 5, 3, 7, 11} {
		r.add(2*i, 2*i)
	}
	assert.Equal(t, byteRanges{{2, 2}, {6, 6}, {10, 10}, {14, 14}, {18, 18}, {22, 22}}, r)
	assert.Equal(t, 5, r.lenAfterAdd(7, 9), "6 and 10 joined")
	assert.Equal(t, 7, r.lenAfterAdd(0, 0))
	assert.Equal(t, 5, r.lenAfterAdd(3, 5), "adjacent to 2 and 6: one range for three")
	r.add(4, 20)
	assert.Equal(t, byteRanges{{2, 2}, {4, 20}, {22, 22}}, r)
	assert.Equal(t, 4, r.lenAfterRemove(8, 8))
	assert.Equal(t, 2, r.lenAfterRemove(3, 21))
	r.remove(8, 8)
	assert.Equal(t, byteRanges{{2, 2}, {4, 7}, {9, 20}, {22, 22}}, r)
}

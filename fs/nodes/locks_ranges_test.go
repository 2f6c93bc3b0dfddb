package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
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

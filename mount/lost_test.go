package mount

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Overflows that go on are forgotten at once, then after rests of 1, 2, 4 and 8 s, 8 s from then on; after a
// quiet spell, at once again.
func TestForgettingPace(t *testing.T) {
	var f forgetting
	now := time.Unix(1e9, 0)
	assert.Zero(t, f.wait(now), "the first overflow: at once")
	var rests []time.Duration
	for range 6 {
		f.made(now)
		rests = append(rests, f.wait(now))
		assert.Equal(t, f.wait(now)/2, f.wait(now.Add(f.wait(now)/2)), "half the rest waited")
		now = now.Add(f.wait(now))
		assert.Zero(t, f.wait(now), "the rest over")
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, rests)
	now = now.Add(forgetQuiet + time.Second)
	assert.Zero(t, f.wait(now), "after a quiet spell: at once")
	f.made(now)
	assert.Equal(t, forgetFirstRest, f.wait(now), "and the rests start again")
}

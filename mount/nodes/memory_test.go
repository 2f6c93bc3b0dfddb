package nodes

import (
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	assert.EqualValues(t, 48*mib, memoryLimit(10*mib, 8*mib, 48*mib, math.MaxInt64), "a small daemon: the floor")
	assert.EqualValues(t, 135*mib, memoryLimit(100*mib, 10*mib, 48*mib, math.MaxInt64), "past the floor: room for 1.25 times live")
	assert.EqualValues(t, 90*mib, memoryLimit(100*mib, 10*mib, 48*mib, 90*mib), "never above a limit set already")
	assert.EqualValues(t, 32*mib, memoryLimit(0, 0, 48*mib, 32*mib), "a lower limit set already is kept")
}

func TestLimitMemoryGivesBack(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() { LimitMemory(1<<40, done); close(ended) }()
	assert.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 1<<40 }, 5*time.Second, time.Millisecond)
	close(done)
	<-ended
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "the limit set before is back")
}

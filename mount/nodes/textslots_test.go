package nodes

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One session's renderings, however many and however long, leave the other sessions their slots.
func TestRenderSlotsLeaveOtherSessionsTheirShare(t *testing.T) {
	s := newRenderSlots(4, 2, 3)
	ctx := context.Background()
	require.True(t, s.acquire(ctx, "s1", 65534, time.Second))
	require.True(t, s.acquire(ctx, "s1", 65534, time.Second))
	start := time.Now()
	assert.False(t, s.acquire(ctx, "s1", 65534, 100*time.Millisecond), "a third slot for s1 while it holds its share")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it waited its deadline")
	assert.True(t, s.acquire(ctx, "s2", 0, 10*time.Millisecond), "another session finds a slot at once")
	// a uid holds at most its share, across sessions
	assert.True(t, s.acquire(ctx, "s3", 65534, 10*time.Millisecond))
	assert.False(t, s.acquire(ctx, "s4", 65534, 10*time.Millisecond), "a fourth slot for uid 65534")
	s.release("s3", 65534)
	s.release("s2", 0)
	s.release("s1", 65534)
	s.release("s1", 65534)
	assert.Equal(t, 0, s.busy)
	assert.Empty(t, s.sessions)
	assert.Empty(t, s.uids)
}

// A freed slot goes to the waiter whose session holds the fewest, whoever came first.
func TestRenderSlotsServeTheLeastServedSessionFirst(t *testing.T) {
	s := newRenderSlots(2, 2, 2)
	ctx := context.Background()
	require.True(t, s.acquire(ctx, "s1", 1, time.Second))
	require.True(t, s.acquire(ctx, "s1", 2, time.Second))
	got := make(chan string, 2)
	go func() {
		if s.acquire(ctx, "s1", 3, 5*time.Second) {
			got <- "s1"
		}
	}()
	time.Sleep(50 * time.Millisecond) // s1's waiter first in the queue
	go func() {
		if s.acquire(ctx, "s2", 4, 5*time.Second) {
			got <- "s2"
		}
	}()
	time.Sleep(50 * time.Millisecond)
	s.release("s1", 1)
	assert.Equal(t, "s2", <-got, "the session holding none is served before the one holding one")
	s.release("s1", 2)
	assert.Equal(t, "s1", <-got)
}

// A waiter whose caller is interrupted ends at once, and a slot given as it gave up goes on to the next.
func TestRenderSlotsWaitEndsWhenInterrupted(t *testing.T) {
	s := newRenderSlots(1, 1, 1)
	require.True(t, s.acquire(context.Background(), "s1", 1, time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- s.acquire(ctx, "s2", 2, time.Minute) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	cancel()
	assert.False(t, <-done)
	assert.Less(t, time.Since(start), time.Second)
	assert.Empty(t, s.queue, "the interrupted waiter left the queue")
	s.release("s1", 1)
	assert.True(t, s.acquire(context.Background(), "s3", 3, 10*time.Millisecond))
}

// A waiter waits while slots are given back (the queue moves), and gives up once none was for its bound.
func TestRenderSlotsWaitWhileTheQueueMoves(t *testing.T) {
	s := newRenderSlots(2, 1, 2)
	require.True(t, s.acquire(context.Background(), "a", 1, time.Second)) // a's share, held
	got := make(chan bool, 1)
	go func() { got <- s.acquire(context.Background(), "a", 1, 300*time.Millisecond) }()
	// Session b's renderings come and go for 1.2 s, longer than the waiter's bound: the slots turn over.
	for range 12 {
		require.True(t, s.acquire(context.Background(), "b", 2, time.Second))
		time.Sleep(100 * time.Millisecond)
		s.release("b", 2)
	}
	select {
	case ok := <-got:
		t.Fatalf("the waiter gave up (%v) while slots were given back every 100 ms", ok)
	default:
	}
	s.release("a", 1)
	assert.True(t, <-got, "the waiter gets a's slot once it is given back")

	held := newRenderSlots(1, 1, 1)
	require.True(t, held.acquire(context.Background(), "a", 1, time.Second))
	start := time.Now()
	assert.False(t, held.acquire(context.Background(), "b", 2, 200*time.Millisecond), "a slot never given back")
	assert.Less(t, time.Since(start), 2*time.Second)
}

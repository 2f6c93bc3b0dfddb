package mount

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A worker that waits on the mount (at an upgrade's exec no daemon serves it, and the next starts only after the
// exec) does not keep close waiting: before, close waited for it for good, and the holder with it (its exec never
// came, the mount hung; once in 1,300 upgrades).
func TestBinderCloseDoesNotWaitForAWorkerStuckOnTheMount(t *testing.T) {
	b := &binder{bound: map[string]map[string]*bound{}, views: map[string]*viewBind{},
		done: make(chan struct{}), stopped: make(chan struct{})} // a worker that never stops
	closed := make(chan struct{})
	go func() { b.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("close waits for a worker stuck on the mount")
	}
	require.True(t, b.closed, "closed: the worker binds nothing if it comes back")
}

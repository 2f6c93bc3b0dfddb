package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// The index's rescan shows a bar only on a terminal, and only once it has taken lateBarAfter; finishing ends
// the bar and unhooks it.
func TestIndexBar(t *testing.T) {
	s := &layout.Store{Root: t.TempDir()}
	made, ended := 0, 0
	var shown [][2]int
	newBar := func(string) (func(done, total int), func()) {
		made++
		return func(done, total int) { shown = append(shown, [2]int{done, total}) }, func() { ended++ }
	}

	finish := indexBarOn(s, false, newBar)
	assert.Nil(t, s.IndexProgress, "not a terminal: no bar")
	finish()

	finish = indexBarOn(s, true, newBar)
	require.NotNil(t, s.IndexProgress)
	s.IndexProgress(1, 4) // quick so far: nothing shown
	assert.Zero(t, made)
	time.Sleep(lateBarAfter + 50*time.Millisecond)
	s.IndexProgress(2, 4)
	s.IndexProgress(3, 4) // right after the last: not drawn again
	s.IndexProgress(4, 4) // the end always is
	finish()
	assert.Equal(t, 1, made)
	assert.Equal(t, [][2]int{{2, 4}, {4, 4}}, shown)
	assert.Equal(t, 1, ended)
	assert.Nil(t, s.IndexProgress)
}

// A late bar whose maker makes none (stderr is no terminal) takes the work's progress and shows nothing.
func TestLateBarWithoutATerminal(t *testing.T) {
	made := 0
	progress, finish := lateBar("x", func(string) (func(done, total int), func()) { made++; return nil, func() {} })
	progress(1, 3)
	time.Sleep(lateBarAfter + 50*time.Millisecond)
	progress(2, 3)
	progress(3, 3)
	finish()
	assert.Equal(t, 1, made)
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRotated(t *testing.T) {
	s := []string{"native", "exec", "mount"}
	assert.Equal(t, s, rotated(s, 0))
	assert.Equal(t, []string{"exec", "mount", "native"}, rotated(s, 1))
	assert.Equal(t, []string{"mount", "native", "exec"}, rotated(s, 5))
	assert.Equal(t, []string{"native", "exec", "mount"}, s, "the places' own order is kept")
	assert.Empty(t, rotated([]string(nil), 2))
}

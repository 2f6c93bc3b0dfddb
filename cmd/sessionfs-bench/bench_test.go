package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRotated(t *testing.T) {
	s := []string{"plain", "exec", "mount"}
	assert.Equal(t, s, rotated(s, 0))
	assert.Equal(t, []string{"exec", "mount", "plain"}, rotated(s, 1))
	assert.Equal(t, []string{"mount", "plain", "exec"}, rotated(s, 5))
	assert.Equal(t, []string{"plain", "exec", "mount"}, s, "the places' own order is kept")
	assert.Empty(t, rotated([]string(nil), 2))
}

package selfexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A holder keeps its argv across an upgrade: the name a build before gave the helper is the helper's role still.
func TestRoleByItsNameOrTheOneBefore(t *testing.T) {
	assert.True(t, Is([]string{"sessionfs", Helper, "/mnt"}, Helper))
	assert.True(t, Is([]string{"sessionfs", "__privileged", "/mnt"}, Helper))
	assert.True(t, Is([]string{"sessionfs", "__takeover", "/mnt"}, Takeover))
	assert.False(t, Is([]string{"sessionfs", "__takeover"}, Helper))
	assert.False(t, Is([]string{"sessionfs"}, Helper))
	assert.False(t, Is([]string{"sessionfs", "mount", Helper}, Helper), "argv[1] only")
	assert.Empty(t, Before(Nsexec))
}

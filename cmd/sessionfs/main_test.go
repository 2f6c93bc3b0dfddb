package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionfs/sessionfs/internal/selfexec"
)

// cobra's suggestions stay one a line; the message before them is what oneLine keeps to one.
func TestCutSuggestions(t *testing.T) {
	head, sugg := cutSuggestions("unknown command \"lss\" for \"sessionfs\"\n\nDid you mean this?\n\tls\n\tps\n")
	assert.Equal(t, `unknown command "lss" for "sessionfs"`, head)
	assert.Equal(t, "\n\nDid you mean this?\n\tls\n\tps", sugg)
	_, sugg = cutSuggestions("unknown command \"lss\" for \"sessionfs\"\n\nDid you mean this?\n\tcsi\n\tlog\n\tls\n\tps\n")
	assert.Equal(t, "\n\nDid you mean this?\n\tls\n\tcsi\n\tlog\n\tps", sugg, "closest first, whatever cobra's order")
	head, sugg = cutSuggestions("no such session")
	assert.Equal(t, "no such session", head)
	assert.Empty(t, sugg)
}

// TestServesLong: the heap is held under the cgroup's limit in the processes that serve (a mount's daemon, in the
// foreground or taking a mount over, its helper, the page, the CSI plugin), not in a command that ends at once.
func TestServesLong(t *testing.T) {
	for _, args := range [][]string{
		{"sessionfs", "mount"}, {"sessionfs", "--store", "/s", "mount", "/m", "--allow-other"}, {"sessionfs", "ui"},
		{"sessionfs", "csi", "--endpoint", "unix:///c"}, {"sessionfs", selfexec.Helper, "/m"}, {"sessionfs", selfexec.Takeover},
	} {
		assert.True(t, servesLong(args), "%q", args)
	}
	for _, args := range [][]string{
		{"sessionfs"}, {"sessionfs", "ls"}, {"sessionfs", "find", "mount"}, {"sessionfs", "exec", "s1", "--", "mount"},
		{"sessionfs", "--store", "mount", "ls"}, {"sessionfs", "help", "ls"},
	} {
		assert.False(t, servesLong(args), "%q", args)
	}
}

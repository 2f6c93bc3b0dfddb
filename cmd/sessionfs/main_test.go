package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
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

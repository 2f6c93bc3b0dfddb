package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFilters(t *testing.T) {
	keep, err := parseFilters([]string{"label=team=web", "label=stage"})
	require.NoError(t, err)
	assert.True(t, keep(map[string]string{"team": "web", "stage": ""}))
	assert.False(t, keep(map[string]string{"team": "web"}), "label=stage wants the key")
	assert.False(t, keep(map[string]string{"team": "cli", "stage": "x"}))
	keep, err = parseFilters(nil)
	require.NoError(t, err)
	assert.True(t, keep(nil))
	for _, bad := range []string{"team=web", "label=", "id=x", "label=bad label", "label=team=bad value"} { // the last two: no label can be so (the page says the same)
		_, err := parseFilters([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

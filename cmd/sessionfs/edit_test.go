package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLabelEdits(t *testing.T) {
	set, unset, err := parseLabelEdits([]string{"team=web", "stage-", "empty=", "example.com/v=1.2"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"team": "web", "empty": "", "example.com/v": "1.2"}, set)
	assert.Equal(t, []string{"stage"}, unset)
	// Kubernetes' rule: no '=' in a value, no key ending in '-', no NUL.
	for _, bad := range []string{"=x", "-", "novalue", "a\x00=b", "url=a=b", "minus-=x"} {
		_, _, err := parseLabelEdits([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseFilters(t *testing.T) {
	keep, err := parseFilters([]string{"label=team=web", "label=stage"})
	require.NoError(t, err)
	assert.True(t, keep(map[string]string{"team": "web", "stage": ""}))
	assert.False(t, keep(map[string]string{"team": "web"}), "label=stage wants the key")
	assert.False(t, keep(map[string]string{"team": "cli", "stage": "x"}))
	keep, err = parseFilters(nil)
	require.NoError(t, err)
	assert.True(t, keep(nil))
	for _, bad := range []string{"team=web", "label=", "id=x"} {
		_, err := parseFilters([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

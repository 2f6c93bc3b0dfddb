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

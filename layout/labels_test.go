package layout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateLabel(t *testing.T) {
	for _, ok := range [][2]string{{"team", "web"}, {"stage", ""}, {"example.com/team", "a.b_c-d"}, {"a", strings.Repeat("v", 63)}} {
		assert.NoError(t, ValidateLabel(ok[0], ok[1]), "%q=%q", ok[0], ok[1])
	}
	for _, bad := range [][2]string{{"a,b", "x"}, {"has space", "x"}, {"k", "two\nlines"}, {"k", "a,b"}, {"k", strings.Repeat("v", 5000)},
		{strings.Repeat("k", 64), ""}, {"-k", ""}, {"k-", ""}, {"/k", ""}, {"Example.com/k", ""}, {"k", "-v"}, {"k", "v w"}} {
		assert.Error(t, ValidateLabel(bad[0], bad[1]), "%q=%q", bad[0], bad[1])
	}
}

func TestEditLabels(t *testing.T) {
	m := &Meta{ID: "web", Labels: map[string]string{"team": "web", "stage": "review"}}
	require.NoError(t, m.EditLabels(map[string]string{"team": "cli", "new": ""}, []string{"stage", "absent"}))
	assert.Equal(t, map[string]string{"team": "cli", "new": ""}, m.Labels)
	require.NoError(t, m.EditLabels(nil, []string{"team", "new"}))
	assert.Nil(t, m.Labels, "no labels left: nil")

	full := map[string]string{}
	for i := range MaxLabels {
		full[fmt.Sprint("k", i)] = ""
	}
	m = &Meta{ID: "web", Labels: full}
	require.NoError(t, m.EditLabels(map[string]string{"k0": "v"}, nil), "a label changed is no more labels")
	assert.EqualError(t, m.EditLabels(map[string]string{"one": "more"}, nil), fmt.Sprintf("label web: a session has at most %d labels", MaxLabels))
}

// A bad value is answered with the rule for values, a bad key with the rule for keys (issue 40, defect 14).
func TestValidateLabelSaysWhichRule(t *testing.T) {
	err := ValidateLabel("team", "web app")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a value is empty, or up to 63 characters")
	assert.NotContains(t, err.Error(), "a key is", "a value's error explains values")
	err = ValidateLabel("my team", "web")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a key is up to 63 characters")
	assert.NotContains(t, err.Error(), "a value is")
}

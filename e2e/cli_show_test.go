package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// show prints lists as text, not Go slices, and the session's runs.
func TestShowText(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	st, err := layout.OpenStore(store)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Update("s1", func(m *layout.Meta) error { m.AddAlias("-home-a"); m.AddAlias("-home-b"); return nil })
	require.NoError(t, err)
	ok(t, store, "exec", "s1", "--", "true")
	out := ok(t, store, "show", "s1")
	assert.Contains(t, out, "Aliases     -home-a, -home-b\n")
	assert.Regexp(t, `(?m)^Runs\s+1, the last .* on local, exit 0 \(sessionfs runs\)$`, out)
	assert.NotContains(t, out, "[")
}

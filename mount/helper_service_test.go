package mount

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The privileged side takes the serving process's calls as a session's input: bad ids and folder names are
// refused, and a mount that binds nothing answers with an error rather than a crash.
func TestHelperServiceRefusesBadInput(t *testing.T) {
	s := newHelperService(t.TempDir())
	var token uint64
	assert.Error(t, s.Removing("../etc", &token), "an id outside the rule")
	assert.Error(t, s.Removing("", &token))
	assert.ErrorIs(t, s.Removing("web", &token), errNoBinder)
	assert.Error(t, s.WantFilled([2]string{"web", "../../x"}, nil), "a folder not bound lazily")
	assert.Error(t, s.WantFilled([2]string{"web", "workspace"}, nil))
	assert.ErrorIs(t, s.WantFilled([2]string{"web", "app"}, nil), errNoBinder)
	assert.ErrorIs(t, s.Want([]string{"web"}, nil), errNoBinder)
	assert.ErrorIs(t, s.WantBound(struct{}{}, nil), errNoBinder)
	assert.NoError(t, s.Removed(42, nil), "an unknown token does nothing")
	assert.ErrorContains(t, s.Abort(struct{}{}, nil), "no sessionfs mount at", "only its own mount's connection")
	assert.Empty(t, s.removals)
}

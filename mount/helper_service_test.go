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

// The view binds' calls: a bad id or a name outside Claude's alphabet binds nothing, and an ask numbered at or
// below a release is stale (the serving process's calls may arrive out of order).
func TestViewBindCallsOrderedAndChecked(t *testing.T) {
	s := newHelperService(t.TempDir())
	assert.ErrorIs(t, s.BindView(ViewArgs{ID: "web", Name: "-x", Seq: 1}, nil), errNoBinder)
	assert.Error(t, s.ReleaseViews(ViewArgs{ID: "../etc"}, nil), "an id outside the rule")

	b := newBinder(t.TempDir(), nil, 1, false, func([]string) map[string]int64 { return nil })
	t.Cleanup(b.close)
	wanted := func(id string) (viewWant, bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		w, ok := b.viewWants[id]
		return w, ok
	}
	for _, bad := range [][2]string{{"../s", "-x"}, {"s", "../../etc"}, {"s", "a.b"}, {"s", ""}, {"s", "-session-workspace"}} {
		b.BindView(bad[0], bad[1], 1)
		_, ok := wanted(bad[0])
		assert.False(t, ok, "%q", bad)
	}
	b.ReleaseViews("s", 5)
	b.BindView("s", "-x", 4)
	_, ok := wanted("s")
	assert.False(t, ok, "asked before the release that came first")
	b.BindView("s", "-x", 6)
	w, ok := wanted("s")
	assert.True(t, ok)
	assert.Equal(t, viewWant{"-x", 6}, w)
	b.ReleaseViews("s", 6)
	_, ok = wanted("s")
	assert.False(t, ok, "a release cancels what it covers")
}

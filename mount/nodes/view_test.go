package nodes

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// viewCalls is a ViewBinder that records what it is asked.
type viewCalls struct {
	mu       sync.Mutex
	binds    []string // name@seq
	releases []uint64
	bound    chan struct{}
}

func (v *viewCalls) Want(string)                   {}
func (v *viewCalls) Removing(string) (done func()) { return func() {} }
func (v *viewCalls) ReleaseViews(_ string, s uint64) {
	v.mu.Lock()
	v.releases = append(v.releases, s)
	v.mu.Unlock()
}
func (v *viewCalls) BindView(_, name string, seq uint64) {
	v.mu.Lock()
	v.binds = append(v.binds, name+"@"+string(rune('0'+seq)))
	v.mu.Unlock()
	v.bound <- struct{}{}
}

// The tree's side of the view binds: an append through a view asks once (the alias recorded before), another
// name's lookup takes it back with the ask's number, the same name's does not; a name taken back that comes back
// within viewContended is contention (nothing asked for a while), one new name after another is not.
func TestViewBindAsksAndReleases(t *testing.T) {
	store, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	_, err = store.Create("s", layout.CreateOptions{})
	require.NoError(t, err)
	tree, err := NewTree(store)
	require.NoError(t, err)
	t.Cleanup(func() { tree.Close() })
	calls := &viewCalls{bound: make(chan struct{}, 8)}
	tree.Binder = calls
	row := rowOf(claude.Agent, "projects")
	num := func(name string) uint64 { return tree.viewNum(row, name) }
	ctx := context.Background()

	tree.bindWritten(ctx, "s", num("-a"))
	<-calls.bound
	m, err := store.Get("s")
	require.NoError(t, err)
	assert.Contains(t, m.Aliases, "-a", "recorded before the bind is asked for")
	tree.bindWritten(ctx, "s", num("-a"))
	tree.bindWritten(ctx, "s", 0) // the canonical name: nothing to bind
	tree.viewLookedUp(ctx, "s", "-a", nil)
	assert.Equal(t, []string{"-a@1"}, calls.binds, "asked once")
	assert.Empty(t, calls.releases, "its own name's lookup keeps it")

	tree.viewLookedUp(ctx, "s", layout.CanonicalProject, nil)
	assert.Equal(t, []uint64{1}, calls.releases, "another name takes it back, up to its ask")
	tree.bindWritten(ctx, "s", num("-b")) // one agent after another: bound at once
	<-calls.bound
	tree.viewLookedUp(ctx, "s", "-a", nil)
	assert.Equal(t, []uint64{1, 2}, calls.releases)
	tree.bindWritten(ctx, "s", num("-a"))
	tree.viewBinds.mu.Lock()
	_, asked := tree.viewBinds.wanted["s"]
	tree.viewBinds.mu.Unlock()
	assert.False(t, asked, "two names in turn within viewContended: nothing asked")
	assert.Equal(t, []string{"-a@1", "-b@2"}, calls.binds)

	_, err = store.Create("u", layout.CreateOptions{})
	require.NoError(t, err)
	for i, name := range []string{"-w", "-s", "-o"} {
		if i > 0 {
			tree.viewLookedUp(ctx, "u", name, nil)
		}
		tree.bindWritten(ctx, "u", num(name))
		<-calls.bound
	}
	assert.Equal(t, []string{"-a@1", "-b@2", "-w@3", "-s@4", "-o@5"}, calls.binds, "one agent after another, each bound")
}

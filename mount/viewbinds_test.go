package mount

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A session with a view bound counts in the binds' limit once, whether or not its folders are bound too.
func TestViewBindsCountInTheLimit(t *testing.T) {
	b := newBinder(t.TempDir(), nil, 2, false, func([]string) map[string]int64 { return nil })
	t.Cleanup(b.close)
	b.mu.Lock()
	b.bound["a"] = map[string]*bound{}
	b.bound["b"] = map[string]*bound{}
	b.views["b"] = &viewBind{name: "-x"}
	b.views["c"] = &viewBind{name: "-y"}
	n, ids := b.boundCount(), slices.Sorted(b.boundIDs())
	b.views = map[string]*viewBind{} // nothing mounted: close must not detach them
	b.mu.Unlock()
	assert.Equal(t, 3, n)
	assert.Equal(t, []string{"a", "b", "c"}, ids)
}

package nodes

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// watchFails is a watcher out of inotify watches for the folders named in full.
type watchFails struct{ full map[string]error }

func (w watchFails) Add(path string) error    { return w.full[path] }
func (w watchFails) Remove(path string) error { return nil }

// The kernel keeps the store's names for long only while every folder it holds is watched.
func TestTimeoutLongOnlyWhileWatched(t *testing.T) {
	st, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	tree := &Tree{Store: st, Timeout: 30 * time.Second, WatchedTimeout: time.Hour}
	assert.Equal(t, 30*time.Second, tree.timeout(), "no watcher: the mount's timeout")

	w := watchFails{full: map[string]error{
		tree.abs("gone"): syscall.ENOENT,
		tree.abs("full"): syscall.ENOSPC,
	}}
	tree.SetWatch(w)
	tree.watchFolder("s1", nil)
	assert.Equal(t, time.Hour, tree.timeout(), "every folder watched")
	tree.watchFolder("gone", nil)
	assert.Equal(t, time.Hour, tree.timeout(), "a folder already gone shows nothing to keep")
	tree.watchFolder("full", nil)
	assert.Equal(t, 30*time.Second, tree.timeout(), "a folder that could not be watched")
	tree.watchFolder("s2", nil)
	assert.Equal(t, 30*time.Second, tree.timeout(), "for good")

	user := &Tree{Store: st, Timeout: 5 * time.Second}
	user.SetWatch(w)
	assert.Equal(t, 5*time.Second, user.timeout(), "a timeout the user chose holds for everything")
}

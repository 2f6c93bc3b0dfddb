package travel

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// Imports and forks assemble a session in a staging folder of the store's sessions folder, hidden (its name is
// not a session id, so no listing and no mount shows it), and rename it into place when whole.
const (
	importStage = ".import-"
	forkStage   = ".fork-"
	// staleAfter: a staging folder older than this is what a killed import or fork left (they take minutes).
	staleAfter = 24 * time.Hour
)

// newStage makes a staging folder for session id, first removing the stale ones. It returns the folder's name
// in the sessions folder, the folder opened, and a func that removes it (a no-op once renamed into place).
func newStage(store *layout.Store, prefix, id string) (name string, dir *layout.Dir, remove func(), err error) {
	sweepStale(store, time.Now())
	path, err := os.MkdirTemp(store.SessionsDir(), prefix+id+"-")
	if err != nil {
		return "", nil, nil, err
	}
	// The store's own folder, named by us: os.RemoveAll works from descriptors and follows no symlink beneath.
	remove = func() { os.RemoveAll(path) }
	sessions, err := store.Sessions()
	if err == nil {
		dir, err = sessions.Sub(filepath.Base(path))
	}
	if err != nil {
		remove()
		return "", nil, nil, err
	}
	return filepath.Base(path), dir, remove, nil
}

// sweepStale removes the staging folders older than staleAfter, best effort.
func sweepStale(store *layout.Store, now time.Time) {
	ents, err := os.ReadDir(store.SessionsDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !(strings.HasPrefix(e.Name(), importStage) || strings.HasPrefix(e.Name(), forkStage)) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleAfter {
			os.RemoveAll(filepath.Join(store.SessionsDir(), e.Name()))
		}
	}
}

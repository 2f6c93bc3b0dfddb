package codex

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/opencode"
	"github.com/sessionfs/sessionfs/internal/lazyregexp"
	"github.com/sessionfs/sessionfs/layout"
)

// dir is Codex's folder in a session.
const dir = ".codex"

// stateIndex is Codex's state index in its folder (state_5.sqlite in 0.171.0; the number is its schema's).
var stateIndex = lazyregexp.New(`^state_[0-9]+\.sqlite$`)

// launch readies Codex's index for a run that sees the session at root. Codex's state index names each
// thread's rollout by its absolute path, and Codex writes a resumed thread's turns to that path wherever it is:
// an index made where the session was seen from elsewhere (the host's mount, a container's /session, another
// store) finds no rollout in a container, and on the host leads Codex to append to the other place's copy; an
// index the session planted would lead it to any file of the user's. So an index naming a rollout anywhere but
// beneath <root>/.codex, or that cannot be read as a plain database (through the untrusted opener), is moved
// aside with its log, as <name>.sessionfs-<time>, before Codex starts: Codex then builds it again from the
// rollouts, which it finds in its own folder (what only the index held, a thread's name or pin, stays in the
// copy moved aside).
func launch(sess *layout.Dir, root, _ string) error {
	homes := []string{filepath.Join(root, dir)}
	if real, err := filepath.EvalSymlinks(homes[0]); err == nil && real != homes[0] {
		homes = append(homes, real) // the folder as CODEX_HOME names it, or as the kernel does
	}
	d, err := sess.Sub(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	ents, err := d.ReadDir(".")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if !stateIndex.MatchString(e.Name()) {
			continue
		}
		paths, err := opencode.ReadColumn(d, e.Name(), "threads", "rollout_path")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && allBeneath(paths, homes) {
			continue
		}
		if err := moveAside(d, e.Name()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, pruneAside(d))...)
}

// keptAside is how many of the indexes moved aside are kept (each with its log): a session used from the host
// and from containers in turn moves one aside at each switch.
const keptAside = 3

// asideName is an index moved aside, or a file of its: <index>.sessionfs-<time>[-wal|-shm|-journal].
var asideName = lazyregexp.New(`^(state_[0-9]+\.sqlite)\.sessionfs-([0-9]{8}T[0-9.]+Z)(-wal|-shm|-journal)?$`)

// pruneAside removes the indexes moved aside but the keptAside newest, with their logs.
func pruneAside(d *layout.Dir) error {
	ents, err := d.ReadDir(".")
	if err != nil {
		return err
	}
	stamps := map[string]bool{}
	for _, e := range ents {
		if m := asideName.FindStringSubmatch(e.Name()); m != nil {
			stamps[m[2]] = true
		}
	}
	if len(stamps) <= keptAside {
		return nil
	}
	sorted := slices.Sorted(maps.Keys(stamps))
	old := map[string]bool{}
	for _, s := range sorted[:len(sorted)-keptAside] {
		old[s] = true
	}
	var errs []error
	for _, e := range ents {
		if m := asideName.FindStringSubmatch(e.Name()); m != nil && old[m[2]] {
			if err := d.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// allBeneath reports whether every path is a clean absolute path beneath one of homes.
func allBeneath(paths []string, homes []string) bool {
	for _, p := range paths {
		beneath := false
		for _, h := range homes {
			beneath = beneath || strings.HasPrefix(p, h+"/")
		}
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || !beneath {
			return false
		}
	}
	return true
}

// moveAside renames the database name in dir and the files SQLite keeps beside it to <name>.sessionfs-<time>,
// never over a file that is there.
func moveAside(dir *layout.Dir, name string) error {
	stamp := ".sessionfs-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		err := dir.Rename(name+suffix, name+stamp+suffix, unix.RENAME_NOREPLACE)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s/%s: move the index Codex would follow out of its folder aside: %w", dir.Name(), name+suffix, err)
		}
	}
	return nil
}

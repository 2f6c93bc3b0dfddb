package dockervolume

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/sessionfs/sessionfs/layout"
	"golang.org/x/sys/unix"
)

// createOpts are the options `docker volume create -o` and a compose file's driver_opts may give.
var createOpts = []string{"labels", "from", "sub"}

// options are Create's options, read.
type options struct {
	labels map[string]string
	from   string // fork the new session from this one
	sub    string // the folder of the session the volume is (its record, volumeRecord)
}

// parseOpts reads Create's options: labels=KEY=VALUE,KEY=VALUE; from=ID; sub=FOLDER (within the session).
func parseOpts(opts map[string]string) (options, error) {
	var o options
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := opts[k]
		switch k {
		case "labels":
			o.labels = map[string]string{}
			for _, kv := range strings.Split(v, ",") {
				key, val, ok := strings.Cut(kv, "=")
				if !ok || key == "" {
					return o, fmt.Errorf("option labels: %q is not KEY=VALUE", kv)
				}
				if err := layout.ValidateLabel(key, val); err != nil {
					return o, fmt.Errorf("option labels: %w", err)
				}
				o.labels[key] = val
			}
		case "from":
			if err := layout.ValidateID(v); err != nil {
				return o, fmt.Errorf("option from: %w", err)
			}
			o.from = v
		case "sub":
			sub, err := cleanSub(v)
			if err != nil {
				return o, err
			}
			o.sub = sub
		default:
			return o, fmt.Errorf("unknown option %q (sessionfs takes %s)", k, strings.Join(createOpts, ", "))
		}
	}
	return o, nil
}

// cleanSub checks a sub-folder of a session: a relative path that stays within it ("workspace",
// "workspace/api", ".claude"), at most 1024 bytes, no control or format characters (bidi overrides).
func cleanSub(sub string) (string, error) {
	c := filepath.Clean(sub)
	if !filepath.IsLocal(c) || c == "." || len(c) > 1024 || strings.ContainsFunc(c, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
		return "", fmt.Errorf("option sub: %q is not a folder within the session (a relative path such as workspace, without ..)", sub)
	}
	return c, nil
}

// The engine gives a volume's options at Create only, and Mount must know a volume's sub: it is kept in a record
// of the store's own (the store's root is trusted; a session's folder is not), <store>/volumes/<id>.json, which
// Remove deletes. A volume with none is the whole session. The record names the session's folder (created): one
// left behind by a session removed without the engine (sessionfs rm) does not apply to a new session of that id.
// Every access is beneath the store's root, never through a symlink, never blocking on a FIFO (layout.Dir): on a
// shared store, whoever else writes the store's root must not make root here write elsewhere or hang.

// volumeRecord is what is kept of a volume beyond its session.
type volumeRecord struct {
	Sub     string `json:"sub,omitempty"`
	Created string `json:"created,omitempty"` // the session's folder's stamp (created)
}

// maxRecord bounds a record read (it holds one short path).
const maxRecord = 4 << 10

// recordsDir is the records' folder beneath the store's root.
const recordsDir = "volumes"

func recordName(id string) string { return recordsDir + "/" + id + ".json" }

// storeRoot opens the store's root folder (trusted: its path is the administrator's).
func (d *Driver) storeRoot() (*layout.Dir, error) { return layout.OpenDir(d.Store.Root) }

// created stamps session id's folder in the store as a record names it: its inode and birth, which the
// session's processes cannot change (its session.json they can), read from the folder alone (no walk of it).
func (d *Driver) created(id string) string {
	sess, err := d.Store.OpenSession(id)
	if err != nil {
		return ""
	}
	defer sess.Close()
	var st unix.Statx_t
	if unix.Statx(sess.Fd(), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &st) != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d.%09d", st.Ino, st.Btime.Sec, st.Btime.Nsec)
}

// saveRecord keeps volume id's record (none when it has no sub), written whole (a rename).
func (d *Driver) saveRecord(id string, sub string) error {
	root, err := d.storeRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if sub == "" {
		if err := root.Remove(recordName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the record of volume %s: %w", id, err)
		}
		return nil
	}
	if err := root.MkdirAll(recordsDir, 0o700, -1, -1); err != nil {
		return fmt.Errorf("the volumes' records (%s): %w", filepath.Join(d.Store.Root, recordsDir), err)
	}
	b, err := json.Marshal(volumeRecord{Sub: sub, Created: d.created(id)})
	if err != nil {
		return err
	}
	if err := root.WriteAtomic(recordName(id), b, 0o600, -1, -1); err != nil {
		return fmt.Errorf("the record of volume %s: %w", id, err)
	}
	return nil
}

// loadRecord reads volume id's sub; none (or a record of an earlier session of that id) is the whole session.
// Its sub is checked as at Create.
func (d *Driver) loadRecord(id string) (string, error) {
	root, err := d.storeRoot()
	if err != nil {
		return "", err
	}
	defer root.Close()
	b, err := root.ReadRegular(recordName(id), maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	var r volumeRecord
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err == nil && r.Sub != "" {
		r.Sub, err = cleanSub(r.Sub)
	}
	if err != nil {
		return "", fmt.Errorf("the record of volume %s (%s): %w", id, filepath.Join(d.Store.Root, recordName(id)), err)
	}
	if r.Created != d.created(id) {
		return "", nil // an earlier session's
	}
	return r.Sub, nil
}

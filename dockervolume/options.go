package dockervolume

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
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
// "workspace/api", ".claude"), at most 1024 bytes, no control characters.
func cleanSub(sub string) (string, error) {
	c := filepath.Clean(sub)
	if !filepath.IsLocal(c) || c == "." || len(c) > 1024 || strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("option sub: %q is not a folder within the session (a relative path such as workspace, without ..)", sub)
	}
	return c, nil
}

// The engine gives a volume's options at Create only, and Mount must know a volume's sub: it is kept in a record
// of the store's own (the store's root is trusted; a session's folder is not), <store>/volumes/<id>.json, which
// Remove deletes. A volume with none is the whole session.

// volumeRecord is what is kept of a volume beyond its session.
type volumeRecord struct {
	Sub string `json:"sub,omitempty"`
}

// maxRecord bounds a record read (it holds one short path).
const maxRecord = 4 << 10

func (d *Driver) recordPath(id string) string {
	return filepath.Join(d.Store.Root, "volumes", id+".json")
}

// saveRecord keeps volume id's record (none when it has no sub), written whole (a rename).
func (d *Driver) saveRecord(id string, r volumeRecord) error {
	path := d.recordPath(id)
	if r.Sub == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadRecord reads volume id's record; none is the whole session. Its sub is checked as at Create.
func (d *Driver) loadRecord(id string) (volumeRecord, error) {
	var r volumeRecord
	fd, err := unix.Open(d.recordPath(id), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("the record of volume %s: %w", id, err)
	}
	f := os.NewFile(uintptr(fd), d.recordPath(id))
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err == nil && len(b) > maxRecord {
		err = fmt.Errorf("over %d bytes", maxRecord)
	}
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err == nil && r.Sub != "" {
		r.Sub, err = cleanSub(r.Sub)
	}
	if err != nil {
		return volumeRecord{}, fmt.Errorf("the record of volume %s (%s): %w", id, d.recordPath(id), err)
	}
	return r, nil
}

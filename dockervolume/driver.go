package dockervolume

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// Driver answers the volume calls for one store mounted at Mountpoint.
type Driver struct {
	Store      *layout.Store
	Mountpoint string

	mu     sync.Mutex
	mounts map[string]map[string]bool // session id -> the ids of the containers that mounted it
}

// Volume is a volume as Docker is told of it.
type Volume struct {
	Name       string
	Mountpoint string            `json:",omitempty"`
	CreatedAt  string            `json:",omitempty"`
	Status     map[string]string `json:",omitempty"`
}

// createOpts are the options `docker volume create -o` and a compose file's driver_opts may give.
var createOpts = []string{"labels"}

// Create makes session name unless it exists (the engine repeats Create after a plugin restarts).
func (d *Driver) Create(name string, opts map[string]string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	labels, err := parseOpts(opts)
	if err != nil {
		return err
	}
	if d.Store.Exists(name) {
		return nil
	}
	_, err = session.Create(d.Store, name, session.Options{CreateOptions: layout.CreateOptions{Labels: labels}, Mountpoint: d.Mountpoint})
	if errors.Is(err, layout.ErrExists) { // made meanwhile by another call
		return nil
	}
	return err
}

// parseOpts reads Create's options: labels=KEY=VALUE,KEY=VALUE.
func parseOpts(opts map[string]string) (map[string]string, error) {
	var labels map[string]string
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		switch k {
		case "labels":
			labels = map[string]string{}
			for _, kv := range strings.Split(opts[k], ",") {
				key, v, ok := strings.Cut(kv, "=")
				if !ok || key == "" {
					return nil, fmt.Errorf("option labels: %q is not KEY=VALUE", kv)
				}
				if err := layout.ValidateLabel(key, v); err != nil {
					return nil, fmt.Errorf("option labels: %w", err)
				}
				labels[key] = v
			}
		default:
			return nil, fmt.Errorf("unknown option %q (sessionfs takes %s)", k, strings.Join(createOpts, ", "))
		}
	}
	return labels, nil
}

// Remove moves session name to the trash (`sessionfs trash restore` brings it back); one something runs in, or
// that a container still mounts, is refused. A session already gone (sessionfs rm) is no error: the engine
// could not forget its volume otherwise.
func (d *Driver) Remove(name string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	if !d.Store.Exists(name) {
		return nil
	}
	d.mu.Lock()
	users := len(d.mounts[name])
	d.mu.Unlock()
	if users > 0 {
		return fmt.Errorf("session %s is mounted by %d container(s)", name, users)
	}
	_, err := d.Store.RemoveIdle(name, false)
	return err
}

// Mount counts container id as a user of session name and says where the session is. The engine follows that
// path itself: it is checked to be the mount's folder of the session, reached with no symlink (a daemon that
// answered a link for it is refused). A race with the daemon remains until the folder is staged by descriptor as
// run --backend docker and CSI do.
func (d *Driver) Mount(name, id string) (string, error) {
	if err := d.exists(name); err != nil {
		return "", err
	}
	if err := d.checkOnMount(name); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mounts == nil {
		d.mounts = map[string]map[string]bool{}
	}
	if d.mounts[name] == nil {
		d.mounts[name] = map[string]bool{}
	}
	d.mounts[name][id] = true
	return d.path(name), nil
}

// Unmount forgets container id as a user of session name.
func (d *Driver) Unmount(name, id string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.mounts[name], id)
	if len(d.mounts[name]) == 0 {
		delete(d.mounts, name)
	}
	return nil
}

// Path is where session name is in the mount.
func (d *Driver) Path(name string) (string, error) {
	if err := d.exists(name); err != nil {
		return "", err
	}
	return d.path(name), nil
}

// Get describes session name as a volume: its id, labels and size in Status.
func (d *Driver) Get(name string) (Volume, error) {
	if err := d.exists(name); err != nil {
		return Volume{}, err
	}
	info := d.Store.Describe(name)
	v := Volume{Name: name, Mountpoint: d.path(name), Status: map[string]string{"session": name, "size": fmt.Sprint(info.Size)}}
	if !info.Created.IsZero() {
		v.CreatedAt = info.Created.UTC().Format(time.RFC3339)
	}
	for k, val := range info.Labels {
		v.Status["label."+k] = val
	}
	return v, nil
}

// List is every session of the store.
func (d *Driver) List() ([]Volume, error) {
	ids, err := d.Store.IDs()
	if err != nil {
		return nil, err
	}
	out := make([]Volume, 0, len(ids))
	for _, id := range ids {
		out = append(out, Volume{Name: id, Mountpoint: d.path(id)})
	}
	return out, nil
}

func (d *Driver) exists(name string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	if !d.Store.Exists(name) {
		return fmt.Errorf("no session %s in %s", name, d.Store.Root)
	}
	return nil
}

// checkOnMount opens session name's folder beneath the mount's root with no symlink followed (bind.OpenPlace).
func (d *Driver) checkOnMount(name string) error {
	root, err := unix.Open(d.Mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the sessionfs mount at %s: %w", d.Mountpoint, err)
	}
	defer unix.Close(root)
	fd, err := bind.OpenPlace(root, "sessions/"+name)
	if err != nil {
		return fmt.Errorf("session %s on the mount %s: %w", name, d.Mountpoint, err)
	}
	unix.Close(fd)
	return nil
}

// path is session id's folder in the mount (id is valid: no separator, no dot-dot).
func (d *Driver) path(id string) string { return filepath.Join(d.Mountpoint, "sessions", id) }

package dockervolume

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
	"github.com/sessionfs/sessionfs/travel"
)

// Driver answers the volume calls for one store mounted at Mountpoint.
type Driver struct {
	Store      *layout.Store
	Mountpoint string
	// Stage is the folder, root's alone, where sessions are laid for the engine (StageRoot/<plugin>).
	Stage string
	// Scope is the engine's: "local", or "global" for a store other hosts mount too (a volume is then one
	// session wherever it is mounted, and one host at a time holds it: its run lease).
	Scope string

	names  sync.Map // session id -> *sync.Mutex: one volume's Mount, Unmount and Remove at a time
	mu     sync.Mutex
	mounts map[string]*volumeUse // session id -> its stage and the containers that mounted it (under mu)
}

// lockName serialises the calls for volume name; the others go on meanwhile (a lay waits on the mount).
func (d *Driver) lockName(name string) func() {
	m, _ := d.names.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// use is volume name's use, nil when no container mounts it.
func (d *Driver) use(name string) *volumeUse {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mounts[name]
}

// setUse records volume name's use (nil: none).
func (d *Driver) setUse(name string, u *volumeUse) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if u == nil {
		delete(d.mounts, name)
		return
	}
	if d.mounts == nil {
		d.mounts = map[string]*volumeUse{}
	}
	d.mounts[name] = u
}

// volumeUse is a session laid for the engine and the ids of the containers that mounted it.
type volumeUse struct {
	stage      *staged
	lease      *layout.Lease // the session's run lease, held while a container mounts it
	containers map[string]bool
}

// Volume is a volume as Docker is told of it.
type Volume struct {
	Name       string
	Mountpoint string            `json:",omitempty"`
	CreatedAt  string            `json:",omitempty"`
	Status     map[string]string `json:",omitempty"`
}

// Create makes session name unless it exists (the engine repeats Create after a plugin restarts): as sessionfs
// new makes one, or with from= as sessionfs fork makes one. sub= is kept for the volume either way.
func (d *Driver) Create(name string, opts map[string]string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	o, err := parseOpts(opts)
	if err != nil {
		return err
	}
	if !d.Store.Exists(name) {
		if err := d.create(name, o); err != nil {
			return err
		}
	}
	return d.saveRecord(name, o.sub)
}

// create makes session name as o says.
func (d *Driver) create(name string, o options) error {
	var err error
	if o.from != "" {
		_, err = travel.Fork(context.Background(), d.Store, o.from, name, travel.ForkOptions{})
		if err == nil && o.labels != nil {
			_, err = d.Store.Update(name, func(m *layout.Meta) error {
				if m.Labels == nil {
					m.Labels = map[string]string{}
				}
				maps.Copy(m.Labels, o.labels)
				return nil
			})
		}
	} else {
		_, err = session.Create(d.Store, name, session.Options{CreateOptions: layout.CreateOptions{Labels: o.labels}, Mountpoint: d.Mountpoint})
	}
	if errors.Is(err, layout.ErrExists) { // made meanwhile by another call
		return nil
	}
	return err
}

// Remove moves session name to the trash (`sessionfs trash restore` brings it back); one something runs in, or
// that a container still mounts, is refused. A session already gone (sessionfs rm) is no error: the engine
// could not forget its volume otherwise.
func (d *Driver) Remove(name string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	if !d.Store.Exists(name) {
		return d.saveRecord(name, "")
	}
	defer d.lockName(name)()
	var users int
	if u := d.use(name); u != nil {
		users = len(u.containers)
	}
	if users > 0 {
		return fmt.Errorf("session %s is mounted by %d container(s)", name, users)
	}
	if _, err := d.Store.RemoveIdle(name, false); err != nil {
		return err
	}
	return d.saveRecord(name, "")
}

// Mount counts container id as a user of session name and returns its stage: the session laid by descriptor
// on a folder only root reaches (stage.go), laid by the first user, who takes the session's run lease for them
// all.
func (d *Driver) Mount(name, id string) (string, error) {
	if err := d.exists(name); err != nil {
		return "", err
	}
	defer d.lockName(name)()
	u := d.use(name)
	if u == nil {
		sub, err := d.loadRecord(name)
		if err != nil {
			return "", err
		}
		// The session runs here while a container mounts it, as a CSI pod's or a sessionfs run's does: another
		// host of a shared store, or a run elsewhere, is refused with who holds it.
		lease, err := d.Store.TryLease(name, layout.ThisProcess())
		if err != nil {
			return "", err
		}
		st, err := d.lay(name, sub)
		if err != nil {
			_ = lease.Release()
			return "", err
		}
		u = &volumeUse{stage: st, lease: lease, containers: map[string]bool{}}
	}
	u.containers[id] = true
	d.setUse(name, u)
	return d.stagePath(name), nil
}

// Unmount forgets container id as a user of session name; the last one takes the stage down (the containers keep
// their own binds) and releases the lease. An id never counted (a helper before this one counted it) leaves the
// stage for its users.
func (d *Driver) Unmount(name, id string) error {
	if err := layout.ValidateID(name); err != nil {
		return err
	}
	defer d.lockName(name)()
	u := d.use(name)
	if u == nil || !u.containers[id] {
		return nil
	}
	delete(u.containers, id)
	if len(u.containers) > 0 {
		return nil
	}
	d.setUse(name, nil)
	err := d.release(name, u.stage)
	_ = u.lease.Release()
	return err
}

// Path is where the engine finds session name: its stage.
func (d *Driver) Path(name string) (string, error) {
	if err := d.exists(name); err != nil {
		return "", err
	}
	return d.stagePath(name), nil
}

// Get describes session name as a volume: its id, labels, size and folder in the mount in Status.
func (d *Driver) Get(name string) (Volume, error) {
	if err := d.exists(name); err != nil {
		return Volume{}, err
	}
	info := d.Store.Describe(name)
	v := Volume{Name: name, Mountpoint: d.stagePath(name), Status: map[string]string{"session": name, "size": fmt.Sprint(info.Size), "folder": d.path(name)}}
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
		out = append(out, Volume{Name: id, Mountpoint: d.stagePath(id)})
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

// path is session id's folder in the mount (id is valid: no separator, no dot-dot).
func (d *Driver) path(id string) string { return filepath.Join(d.Mountpoint, "sessions", id) }

// stagePath is where session id is laid for the engine.
func (d *Driver) stagePath(id string) string { return filepath.Join(d.Stage, id) }

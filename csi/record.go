package csi

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionfs/sessionfs/layout"
)

// recordFile holds, in the plugin's state folder, every target it published: a restarted plugin unpublishes
// only its own mounts and answers a repeated publish of one as done.
const recordFile = "published.json"

// record is a target this plugin published: the session, its read-only flag, and the mount-table fields of the
// session's mount there (a clone of the node's mount: its device and /sessions/<id>).
type record struct {
	Target   string `json:"target"`
	Session  string `json:"session"`
	ReadOnly bool   `json:"read_only,omitempty"`
	VolumeID string `json:"volume_id"`
	Major    int    `json:"major"`
	Minor    int    `json:"minor"`
	Root     string `json:"root"`
}

// saveRecords writes what is published, atomically, to the state folder (none: kept in memory only).
func (d *Driver) saveRecords() error {
	if d.StateDir == "" {
		return nil
	}
	recs := make([]record, 0, len(d.published))
	for _, p := range d.published {
		recs = append(recs, p.rec)
	}
	slices.SortFunc(recs, func(a, b record) int { return strings.Compare(a.Target, b.Target) })
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.StateDir, 0o700); err != nil {
		return err
	}
	return layout.WriteFileAtomic(filepath.Join(d.StateDir, recordFile), append(b, '\n'), 0o600)
}

// loadRecords reads the state folder's records; a record that is not one this plugin could have written (a
// target outside the kubelet's folder, a bad id) is an error, as is a damaged file.
func (d *Driver) loadRecords() ([]record, error) {
	if d.StateDir == "" {
		return nil, nil
	}
	path := filepath.Join(d.StateDir, recordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("%s: %v (the plugin's record of what it published: move it aside to start afresh)", path, err)
	}
	for _, r := range recs {
		if _, err := d.beneathKubelet(r.Target); err != nil || layout.ValidateID(r.Session) != nil {
			return nil, fmt.Errorf("%s: record of %q (session %q) is not one this plugin makes (move the file aside to start afresh)", path, r.Target, r.Session)
		}
	}
	return recs, nil
}

// restore takes back what a plugin before this one published: each recorded target still showing its session's
// mount is published again (its lease taken anew, as the old plugin's died with it); the others are forgotten.
func (d *Driver) restore() error {
	recs, err := d.loadRecords()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.published = map[string]*publication{}
	for _, r := range recs {
		m, err := d.mountAt(r.Target)
		if err != nil || m == nil || !d.owns(&r, m) {
			continue
		}
		p := &publication{rec: r}
		if p.lease, err = d.Store.TryLease(r.Session, d.holder()); err != nil {
			fmt.Fprintf(os.Stderr, "sessionfs csi: %s shows session %s, whose lease is not to be had now: %v\n", r.Target, r.Session, err)
		}
		d.published[r.Target] = p
	}
	if len(d.published) == len(recs) {
		return nil // nothing forgotten (a controller, which publishes nothing, writes nothing)
	}
	return d.saveRecords()
}

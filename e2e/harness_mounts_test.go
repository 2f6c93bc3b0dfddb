package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	id, root, point, opts, fstype string // id: the mount's, as /proc/PID/fdinfo's mnt_id names it
}

// mountsUnder lists the mounts strictly beneath p.
func mountsUnder(t *testing.T, p string) []mountEntry {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || !strings.HasPrefix(f[4], p+"/") {
			continue
		}
		for i := 6; i < len(f)-1; i++ {
			if f[i] == "-" {
				out = append(out, mountEntry{id: f[0], root: f[3], point: f[4], opts: f[5], fstype: f[i+1]})
				break
			}
		}
	}
	return out
}

// bindsOf lists the binds over the mounted session id, by folder.
func bindsOf(t *testing.T, m *mounted, id string) map[string]mountEntry {
	out := map[string]mountEntry{}
	for _, e := range mountsUnder(t, m.session(id)) {
		if dir := strings.TrimPrefix(e.point, m.session(id)+"/"); !strings.Contains(dir, "/") {
			out[dir] = e
		}
	}
	return out
}

func needRootMount(t *testing.T) {
	t.Helper()
	need(t, os.Geteuid() == 0, "binds over the mount are made by a root daemon; TestMountAsNormalUser covers users")
}

// waitBound waits until session id's folders are bound: its workspace, and app and mcps where they hold
// something.
func waitBound(t *testing.T, m *mounted, id string) map[string]mountEntry {
	t.Helper()
	want := []string{"workspace"}
	for _, dir := range []string{"app", "mcps"} {
		if ents, err := os.ReadDir(filepath.Join(m.store, "sessions", id, dir)); err == nil && len(ents) > 0 {
			want = append(want, dir)
		}
	}
	var b map[string]mountEntry
	eventually(t, 5*time.Second, func() bool {
		b = bindsOf(t, m, id)
		for _, dir := range want {
			if _, ok := b[dir]; !ok {
				return false
			}
		}
		return true
	}, "session %s's %v bound (have %v); the daemon said: %s", id, want, b, m.log)
	return b
}

// fill puts a file in each of session id's folders in the store.
func fill(t *testing.T, store, id string, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", id, dir, "f"), []byte(dir), 0o644))
	}
}

// fstypes parses `/proc/self/mountinfo` lines and returns the filesystem type of each mount point.
func fstypes(mountinfo string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) > 4 && len(g) > 0 {
			out[f[4]] = g[0]
		}
	}
	return out
}

// mountOpts maps each mount point of a mountinfo text to its per-mount options (the top of a stack wins).
func mountOpts(mountinfo string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(mountinfo, "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			out[f[4]] = f[5]
		}
	}
	return out
}

// assertNoSuidNoDev checks the binds at paths are nosuid and nodev: a set-uid file or a device node a session
// planted in its own folder gives nothing through them.
func assertNoSuidNoDev(t *testing.T, mountinfo string, paths ...string) {
	t.Helper()
	opts := mountOpts(mountinfo)
	for _, p := range paths {
		o := strings.Split(opts[p], ",")
		assert.Subset(t, o, []string{"nosuid", "nodev"}, "%s is bound nosuid,nodev: %s", p, opts[p])
	}
}

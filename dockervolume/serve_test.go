package dockervolume

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// plugin serves a driver of a new store on a real socket and returns a client of it and the store.
func plugin(t *testing.T) (call func(path string, body any) (int, map[string]any), st *layout.Store, sock, mnt, stage string) {
	t.Helper()
	st, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	// The mount as the plugin sees it: a folder a session's folder is found in (the tests make them).
	mnt = t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "sessions"), 0o755))
	dir := t.TempDir()
	l, err := Listen(dir, "sessionfs-test")
	require.NoError(t, err)
	done := make(chan error, 1)
	stage = filepath.Join(t.TempDir(), "stage")
	go func() { done <- Serve(l, &Driver{Store: st, Mountpoint: mnt, Stage: stage}) }()
	t.Cleanup(func() { l.Close(); require.NoError(t, <-done) })
	sock = SocketPath(dir, "sessionfs-test")
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	call = func(path string, body any) (int, map[string]any) {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		resp, err := c.Post("http://plugin"+path, "application/json", strings.NewReader(string(b)))
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, contentType, resp.Header.Get("Content-Type"))
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	return call, st, sock, mnt, stage
}

// needRoot fails under CI (where the tests run as root) and skips elsewhere: a stage is a bind.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("requirement missing under CI: root (a stage is a bind: CAP_SYS_ADMIN)")
	}
	t.Skip("skipped: a stage is a bind, root's")
}

// showOnMount makes session id's folder in the mount as the mount shows it (its folders, a mark of the mount's).
func showOnMount(t *testing.T, mnt, id string) {
	t.Helper()
	for _, rel := range bind.RunDirs {
		require.NoError(t, os.MkdirAll(filepath.Join(mnt, "sessions", id, rel), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "sessions", id, "from-the-mount"), nil, 0o644))
}

func TestProtocol(t *testing.T) {
	needRoot(t)
	call, st, sock, mnt, stage := plugin(t)
	fi, err := os.Stat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the socket is root's alone")

	code, out := call("/Plugin.Activate", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, []any{"VolumeDriver"}, out["Implements"])
	_, out = call("/VolumeDriver.Capabilities", nil)
	assert.Equal(t, map[string]any{"Scope": "local"}, out["Capabilities"])

	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "demo", "Opts": map[string]string{"labels": "team=infra,agent=claude"}})
	require.Equal(t, 200, code, "%v", out)
	m, err := st.Get("demo")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"team": "infra", "agent": "claude"}, m.Labels)
	assert.DirExists(t, filepath.Join(st.Dir("demo"), "workspace"), "made as sessionfs new makes one")
	code, _ = call("/VolumeDriver.Create", map[string]any{"Name": "demo"})
	assert.Equal(t, 200, code, "Create again (the engine repeats it) is no error")

	_, out = call("/VolumeDriver.Path", map[string]any{"Name": "demo"})
	assert.Equal(t, filepath.Join(stage, "demo"), out["Mountpoint"])
	_, out = call("/VolumeDriver.Get", map[string]any{"Name": "demo"})
	v := out["Volume"].(map[string]any)
	assert.Equal(t, "demo", v["Name"])
	assert.Equal(t, filepath.Join(stage, "demo"), v["Mountpoint"])
	assert.Equal(t, "infra", v["Status"].(map[string]any)["label.team"])
	assert.Equal(t, filepath.Join(mnt, "sessions", "demo"), v["Status"].(map[string]any)["folder"])
	assert.NotEmpty(t, v["CreatedAt"])
	_, out = call("/VolumeDriver.List", nil)
	assert.Equal(t, []any{map[string]any{"Name": "demo", "Mountpoint": filepath.Join(stage, "demo")}}, out["Volumes"])

	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "demo", "ID": "c1"})
	assert.Equal(t, 500, code, "the session's folder is not on the mount yet: %v", out)
	showOnMount(t, mnt, "demo")
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir("demo"), "workspace", "from-the-store"), nil, 0o644))
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "demo", "ID": "c1"})
	require.Equal(t, 200, code, "%v", out)
	laid := filepath.Join(stage, "demo")
	assert.Equal(t, laid, out["Mountpoint"])
	assert.FileExists(t, filepath.Join(laid, "from-the-mount"), "the session's folder of the mount is laid there")
	assert.FileExists(t, filepath.Join(laid, "workspace", "from-the-store"), "with the store's workspace bound over it")
	fi, err = os.Stat(stage)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the stage is root's alone")
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "demo", "ID": "c2"})
	require.Equal(t, 200, code, "%v", out)
	code, _ = call("/VolumeDriver.Unmount", map[string]any{"Name": "demo", "ID": "c2"})
	assert.Equal(t, 200, code)
	assert.FileExists(t, filepath.Join(laid, "from-the-mount"), "c1 still mounts it")
	_, err = st.TryLease("demo", layout.ThisProcess())
	assert.ErrorIs(t, err, layout.ErrRunning, "a mounted volume's session runs here: a run elsewhere is refused")
	code, out = call("/VolumeDriver.Remove", map[string]any{"Name": "demo"})
	assert.Equal(t, 500, code)
	assert.Contains(t, out["Err"], "mounted by 1 container")
	assert.True(t, st.Exists("demo"))
	code, _ = call("/VolumeDriver.Unmount", map[string]any{"Name": "demo", "ID": "c1"})
	assert.Equal(t, 200, code)
	assert.NoDirExists(t, laid, "the last container's Unmount takes the stage down")
	lease, err := st.TryLease("demo", layout.ThisProcess())
	require.NoError(t, err, "and releases the session's lease")
	require.NoError(t, lease.Release())
	code, out = call("/VolumeDriver.Remove", map[string]any{"Name": "demo"})
	require.Equal(t, 200, code, "%v", out)
	assert.False(t, st.Exists("demo"))
	trash, err := filepath.Glob(filepath.Join(st.TrashDir(), "demo.*"))
	require.NoError(t, err)
	assert.Len(t, trash, 1, "removed to the trash, not deleted")
}

// TestHostileCalls: names that are no session id, unknown options, calls for sessions that are not there, a body
// too large: each an error naming why, nothing made.
func TestHostileCalls(t *testing.T) {
	call, st, _, mnt, stage := plugin(t)
	for _, name := range []string{"", "..", "../etc", "a/b", "/abs", ".hidden", strings.Repeat("x", 300)} {
		code, out := call("/VolumeDriver.Create", map[string]any{"Name": name})
		assert.Equal(t, 500, code, "%q", name)
		assert.NotEmpty(t, out["Err"], "%q", name)
		code, _ = call("/VolumeDriver.Mount", map[string]any{"Name": name, "ID": "c"})
		assert.Equal(t, 500, code, "%q", name)
	}
	code, out := call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"size": "1G"}})
	assert.Equal(t, 500, code)
	assert.Contains(t, out["Err"], `unknown option "size"`)
	for _, sub := range []string{"../../etc", "/etc", "workspace/../..", ".", "a\nb"} {
		code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"sub": sub}})
		assert.Equal(t, 500, code, "%q", sub)
		assert.Contains(t, out["Err"], "option sub", "%q", sub)
	}
	for _, from := range []string{"../x", "missing"} {
		code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"from": from}})
		assert.Equal(t, 500, code, "%q: %v", from, out)
	}
	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"labels": "novalue"}})
	assert.Equal(t, 500, code)
	assert.Contains(t, out["Err"], "KEY=VALUE")
	ids, err := st.IDs()
	require.NoError(t, err)
	assert.Empty(t, ids, "nothing made by a refused call")
	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"labels": "bad key=v"}})
	assert.Equal(t, 500, code, "a label sessionfs label would refuse: %v", out)
	// A daemon that answers a link for a session's folder: the engine, which follows the path, is not given it.
	_, err = st.Create("linked", layout.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Symlink("/etc", filepath.Join(mnt, "sessions", "linked")))
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "linked", "ID": "c"})
	assert.Equal(t, 500, code, "%v", out)
	assert.NoFileExists(t, filepath.Join(stage, "linked", "passwd"), "nothing of the link's laid")
	code, out = call("/VolumeDriver.Remove", map[string]any{"Name": "gone"})
	assert.Equal(t, 200, code, "a session already gone is removed: %v", out)
	for _, path := range []string{"/VolumeDriver.Mount", "/VolumeDriver.Path", "/VolumeDriver.Get"} {
		code, out = call(path, map[string]any{"Name": "gone", "ID": "c"})
		assert.Equal(t, 500, code, path)
		assert.Contains(t, out["Err"], "no session gone", path)
	}
	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s1", "Opts": map[string]string{"labels": "k=" + strings.Repeat("v", maxRequest)}})
	assert.Equal(t, 500, code)
	assert.Contains(t, out["Err"], "over")
	assert.False(t, st.Exists("s1"))
}

// TestOptions: from= forks a session (labels set on the fork), sub= makes the volume one folder of the session,
// laid from the store (workspace) or the mount (.claude); a sub the session made a link is refused at Mount.
func TestOptions(t *testing.T) {
	needRoot(t)
	call, st, _, mnt, stage := plugin(t)
	_, err := st.Create("origin", layout.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(st.Dir("origin"), "workspace", "notes"), []byte("origin's\n"), 0o644))
	code, out := call("/VolumeDriver.Create", map[string]any{"Name": "copy", "Opts": map[string]string{"from": "origin", "labels": "k=v"}})
	require.Equal(t, 200, code, "%v", out)
	b, err := os.ReadFile(filepath.Join(st.Dir("copy"), "workspace", "notes"))
	require.NoError(t, err)
	assert.Equal(t, "origin's\n", string(b), "forked")
	m, err := st.Get("copy")
	require.NoError(t, err)
	assert.Equal(t, "origin", m.ForkedFrom)
	assert.Equal(t, "v", m.Labels["k"])

	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "copy", "Opts": map[string]string{"sub": "workspace"}})
	require.Equal(t, 200, code, "an existing session's volume made one folder: %v", out)
	showOnMount(t, mnt, "copy")
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "copy", "ID": "c1"})
	require.Equal(t, 200, code, "%v", out)
	laid := filepath.Join(stage, "copy")
	assert.FileExists(t, filepath.Join(laid, "notes"), "the store's workspace is the volume")
	assert.NoFileExists(t, filepath.Join(laid, "from-the-mount"))
	code, _ = call("/VolumeDriver.Unmount", map[string]any{"Name": "copy", "ID": "c1"})
	assert.Equal(t, 200, code)

	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "copy", "Opts": map[string]string{"sub": ".claude"}})
	require.Equal(t, 200, code, "%v", out)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "sessions", "copy", ".claude", "view-mark"), nil, 0o644))
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "copy", "ID": "c2"})
	require.Equal(t, 200, code, "%v", out)
	assert.FileExists(t, filepath.Join(laid, "view-mark"), ".claude is the mount's (its views)")
	code, _ = call("/VolumeDriver.Unmount", map[string]any{"Name": "copy", "ID": "c2"})
	assert.Equal(t, 200, code)

	// The session swaps its workspace for a link to a host folder: a sub=workspace volume is refused at Mount.
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "host-file"), nil, 0o644))
	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "copy", "Opts": map[string]string{"sub": "workspace"}})
	require.Equal(t, 200, code, "%v", out)
	ws := filepath.Join(st.Dir("copy"), "workspace")
	require.NoError(t, os.RemoveAll(ws))
	require.NoError(t, os.Symlink(host, ws))
	code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "copy", "ID": "c3"})
	assert.Equal(t, 500, code)
	assert.Contains(t, out["Err"], "not a folder of the session")
	assert.NoFileExists(t, filepath.Join(laid, "host-file"))

	code, out = call("/VolumeDriver.Remove", map[string]any{"Name": "copy"})
	require.Equal(t, 200, code, "%v", out)
	assert.NoFileExists(t, filepath.Join(st.Root, "volumes", "copy.json"), "its record goes with it")
}

// TestRecordsBeneathTheStore: whoever else writes the store's root (another host of a shared store) cannot make
// the plugin write through a link nor hang it: a records folder that is a link, a record that is a link or a FIFO.
func TestRecordsBeneathTheStore(t *testing.T) {
	call, st, _, _, _ := plugin(t)
	_, err := st.Create("s", layout.CreateOptions{})
	require.NoError(t, err)
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(st.Root, "volumes")))
	code, out := call("/VolumeDriver.Create", map[string]any{"Name": "s", "Opts": map[string]string{"sub": "workspace"}})
	assert.Equal(t, 500, code, "a records folder that is a link: %v", out)
	ents, err := os.ReadDir(elsewhere)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing written through the link")

	require.NoError(t, os.Remove(filepath.Join(st.Root, "volumes")))
	require.NoError(t, os.Mkdir(filepath.Join(st.Root, "volumes"), 0o700))
	victim := filepath.Join(elsewhere, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious\n"), 0o644))
	require.NoError(t, os.Symlink(victim, filepath.Join(st.Root, "volumes", "s.json")))
	code, out = call("/VolumeDriver.Create", map[string]any{"Name": "s", "Opts": map[string]string{"sub": "workspace"}})
	require.Equal(t, 200, code, "%v", out)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(b), "the link is replaced, never followed")

	require.NoError(t, os.Remove(filepath.Join(st.Root, "volumes", "s.json")))
	require.NoError(t, unix.Mkfifo(filepath.Join(st.Root, "volumes", "s.json"), 0o600))
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, out = call("/VolumeDriver.Mount", map[string]any{"Name": "s", "ID": "c"})
	}()
	select {
	case <-done:
		assert.Equal(t, 500, code, "a record that is a FIFO: %v", out)
		assert.Contains(t, out["Err"], "the record of volume s")
	case <-time.After(10 * time.Second):
		t.Fatal("a record that is a FIFO hangs Mount")
	}
}

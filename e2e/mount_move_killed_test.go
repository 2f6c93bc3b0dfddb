package e2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/takeover"
)

// A holder moving to another pid namespace (the CSI plugin's DaemonSet update, mount/takeover/holder_move.go) killed in the
// middle of the hand-over: the connection must not be lost to both holders.

// movedOut is what a holder moving hands over, as its asker reads it off the control socket: the state (its
// length first), the connection and the node log.
type movedOut struct {
	state    []byte
	dev, log int
	format   string // the holder's hand-over format and node-log version, as it says them
	nodeLog  uint32
}

// takeOutOfHolder asks the holder of connection minor to move, as the next CSI plugin does, and takes what it hands
// over: the holder says "gone" and exits, and this process holds the mount's connection.
func takeOutOfHolder(t *testing.T, minor uint32) movedOut {
	t.Helper()
	path := filepath.Join(takeover.ControlDir(), fmt.Sprintf("mount-%d.sock", minor))
	ask := func(req string) *net.UnixConn {
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		require.NoError(t, err)
		_, err = c.Write([]byte(req))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		return c
	}
	c := ask(`{"Ask":"state"}`)
	var st struct {
		Format  string
		NodeLog uint32
	}
	require.NoError(t, json.NewDecoder(c).Decode(&st))
	c.Close()
	req, _ := json.Marshal(map[string]any{"Ask": "move", "Format": st.Format, "NodeLog": st.NodeLog})
	c = ask(string(req))
	defer c.Close()
	head, oob := make([]byte, 4), make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(head, oob)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	fds, err := unix.ParseUnixRights(&msgs[0])
	require.NoError(t, err)
	require.Len(t, fds, 2, "the connection and the node log")
	out := movedOut{state: make([]byte, binary.LittleEndian.Uint32(head)), dev: fds[0], log: fds[1], format: st.Format, nodeLog: st.NodeLog}
	_, err = io.ReadFull(c, out.state)
	require.NoError(t, err)
	var moved struct{ Locks []json.RawMessage }
	require.NoError(t, json.Unmarshal(out.state, &moved))
	require.Empty(t, moved.Locks, "no lock owner is held here")
	_, err = c.Write([]byte("taken\n"))
	require.NoError(t, err)
	gone := make([]byte, 5)
	_, err = io.ReadFull(c, gone)
	require.NoError(t, err)
	require.Equal(t, "gone\n", string(gone))
	return out
}

// TestMountMoveOldHolderKilled: a holder killed between handing the mount over (the connection, the node log, its
// state) and saying "gone" leaves the mount to the next plugin, which serves it: it alone holds the connection now.
// The old holder here is this test, playing the CSI plugin pod before (it took the mount from a real holder as a
// plugin does, then offers it on the control socket as that holder would) and dying once told "taken". Before, the
// next plugin took the silence for the old holder serving on, dropped what it was handed, and the mount was lost
// (every file of it: "transport endpoint is not connected").
func TestMountMoveOldHolderKilled(t *testing.T) {
	need(t, os.Geteuid() == 0, "root: a held mount, and the control folder")
	t.Run("killed once it read taken", func(t *testing.T) { moveKilled(t, true) })
	// Its socket closed with "taken" unread: the next plugin reads ECONNRESET, not an end.
	t.Run("killed before it read taken", func(t *testing.T) { moveKilled(t, false) })
}

// moveKilled is TestMountMoveOldHolderKilled with the plugin before killed once it read "taken" (readTaken), or once
// "taken" came and before it read it.
func moveKilled(t *testing.T, readTaken bool) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	require.NoError(t, os.WriteFile(filepath.Join(store, "sessions", "s1", "workspace", "f"), []byte("kept"), 0o644))
	m := mount(t, store)
	helper := helperPID(t, m.cmd.Process.Pid)
	t.Cleanup(func() { endTakeoverMount(t, m, helper) })
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(m.mnt))
	require.NoError(t, err)
	require.NotEmpty(t, mounts)
	minor := uint32(mounts[len(mounts)-1].Minor)

	held := takeOutOfHolder(t, minor)
	var once sync.Once
	closeHeld := func() { once.Do(func() { unix.Close(held.dev); unix.Close(held.log) }) }
	defer closeHeld()
	eventually(t, 10*time.Second, func() bool { return syscall.Kill(helper, 0) != nil }, "the holder moved out exits")

	// The plugin pod before: offers what it holds to the next, and is killed once it hears "taken".
	path := filepath.Join(takeover.ControlDir(), fmt.Sprintf("mount-%d.sock", minor))
	_ = os.Remove(path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	killed := make(chan error, 1)
	go func() {
		killed <- func() error {
			defer l.Close() // its socket goes with it (the path is left, as a process killed leaves it)
			l.SetUnlinkOnClose(false)
			for {
				c, err := l.AcceptUnix()
				if err != nil {
					return err
				}
				buf := make([]byte, 4096)
				n, err := c.Read(buf)
				if err != nil {
					c.Close()
					return err
				}
				if strings.Contains(string(buf[:n]), `"state"`) {
					var moved struct{ Version string }
					_ = json.Unmarshal(held.state, &moved)
					fmt.Fprintf(c, `{"Store":%q,"Mountpoint":%q,"Format":%q,"NodeLog":%d,"Version":%q}`+"\n",
						store, m.mnt, held.format, held.nodeLog, moved.Version)
					c.Close()
					continue
				}
				msg := binary.LittleEndian.AppendUint32(nil, uint32(len(held.state)))
				if _, _, err := c.WriteMsgUnix(append(msg, held.state...), unix.UnixRights(held.dev, held.log), nil); err != nil {
					c.Close()
					return err
				}
				word := make([]byte, 6)
				if readTaken {
					_, err = io.ReadFull(c, word)
				} else {
					raw, _ := c.SyscallConn()
					_ = raw.Control(func(fd uintptr) {
						p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
						_, err = unix.Poll(p, 30000)
					})
					copy(word, "taken\n") // come, not read
				}
				// Killed here: its descriptors close with it, and it never says "gone".
				closeHeld()
				c.Close()
				if err != nil || string(word) != "taken\n" {
					return fmt.Errorf("the next plugin said %q, %v", word, err)
				}
				return nil
			}
		}()
	}()

	start := func(cmd *exec.Cmd) error {
		cmd.Path, cmd.Args[0] = bin, bin // this test's binary is no sessionfs
		return cmd.Start()
	}
	moved, err := takeover.TakeHolder(store, m.mnt, start)
	require.NoError(t, <-killed, "the plugin before handed over")
	t.Logf("the next plugin, its predecessor killed once told 'taken': %v (%+v)", err, moved)
	if moved != nil && moved.Cmd != nil {
		t.Cleanup(func() {
			m.stop(t)
			done := make(chan struct{})
			go func() { _ = moved.Cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = moved.Cmd.Process.Kill()
				<-done
			}
		})
	}
	b, readErr := os.ReadFile(filepath.Join(m.session("s1"), "workspace", "f"))
	t.Logf("a file of the mount read after: %q, %v", b, readErr)
	require.NoError(t, err, "the next plugin took the mount over")
	assert.NoError(t, readErr, "the mount serves")
	assert.Equal(t, "kept", string(b))
}

package takeover

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/nodes"
)

// keptOwners are n owners as a holder keeps them, numbered as a daemon numbers them (its pid's high bits).
func keptOwners(n int) []heldOwner {
	out := make([]heldOwner, n)
	for i := range out {
		out[i] = heldOwner{Owner: nodes.KeptOwner{ID: 4194304<<32 + uint64(i), Owner: 0xfedcba9876543210 + uint64(i),
			Fh: 1<<20 + uint64(i), Session: "a-session-of-the-store", UID: 65534}, FD: 1000 + i}
	}
	return out
}

// TestCarriedLocksRoundTrip: a few owners stay inline (as builds before read them), the daemon's most go in a
// memory file; both read back whole.
func TestCarriedLocksRoundTrip(t *testing.T) {
	for _, n := range []int{0, 3, maxHeldLockOwners} {
		var st upgradedState
		f, err := st.carryLocks(keptOwners(n))
		require.NoError(t, err)
		if n == maxHeldLockOwners {
			require.NotNil(t, f, "%d owners inline", n)
			defer f.Close()
			dup, err := unix.Dup(st.LocksFile)
			require.NoError(t, err)
			st.LocksFile = dup // as the binary executed numbers it
		} else {
			assert.Nil(t, f)
		}
		b, err := json.Marshal(st)
		require.NoError(t, err)
		var got upgradedState
		require.NoError(t, json.Unmarshal(b, &got))
		owners, err := got.lockOwners()
		require.NoError(t, err)
		t.Logf("%d owners: the state takes %d bytes of environment", n, len(b))
		assert.Less(t, len(b), 128<<10, "past the kernel's most for one environment string")
		assert.Equal(t, keptOwners(n), append([]heldOwner{}, owners...))
	}
}

// TestMovedHelperStartsWithManyLockOwners: a holder moved to another pid namespace (a CSI plugin's update) with
// the daemon's most lock owners kept starts its helper. Before, the owners went in one environment string past
// the kernel's 128 KiB: the start failed (E2BIG) after the holder before had let go, and the node's mount was lost.
func TestMovedHelperStartsWithManyLockOwners(t *testing.T) {
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	moved := movedState{Config: Config{Mountpoint: "/nonexistent"}, Locks: keptOwners(maxHeldLockOwners)}
	held := make([]*os.File, 2+len(moved.Locks))
	for i := range held {
		held[i] = null
	}
	var carried []heldOwner
	start := func(cmd *exec.Cmd) error {
		// What the helper would read: its state, and the memory file at the descriptor it names.
		for _, kv := range cmd.Env {
			if raw, ok := strings.CutPrefix(kv, upgradeEnv+"="); ok {
				var st upgradedState
				require.NoError(t, json.Unmarshal([]byte(raw), &st))
				if st.LocksFile > 0 {
					require.Equal(t, movedLocksFD+len(moved.Locks), st.LocksFile, "the memory file's descriptor in the helper")
					dup, err := unix.Dup(int(cmd.ExtraFiles[st.LocksFile-3].Fd()))
					require.NoError(t, err)
					st.LocksFile = dup
				}
				carried, err = st.lockOwners()
				require.NoError(t, err)
			}
		}
		cmd.Path, cmd.Args = "/bin/true", []string{"true"}
		return cmd.Start()
	}
	cmd, served, err := startMovedHelper(moved, held, start)
	t.Logf("a helper started with %d lock owners: %v", len(moved.Locks), err)
	require.NoError(t, err)
	served.Close()
	require.NoError(t, cmd.Wait())
	require.Len(t, carried, len(moved.Locks))
	for i, o := range carried {
		require.Equal(t, moved.Locks[i].Owner, o.Owner)
		require.Equal(t, movedLocksFD+i, o.FD, "owner %d's descriptor in the helper", i)
	}
}

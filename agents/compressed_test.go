package agents_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/codex/codextest"
	"github.com/sessionfs/sessionfs/layout"
)

// readAll reads what conversation file rel of sess holds; it returns the bytes read and the error that ended it
// (nil at its end).
func readAll(t *testing.T, sess *layout.Dir, rel string) (int64, error) {
	t.Helper()
	c, err := agents.OpenFile(sess, rel)
	require.NoError(t, err)
	defer c.Close()
	return io.Copy(io.Discard, c.Reader)
}

// A compressed conversation file reads as what it stands for; a plain one as it is.
func TestOpenFileDecompresses(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	data := bytes.Repeat([]byte(`{"type":"response_item","payload":{"type":"message"}}`+"\n"), 1000)
	codextest.Write(t, root, "a.jsonl.zst", codextest.Compress(t, data))
	codextest.Write(t, root, "b.jsonl", data)
	for _, rel := range []string{"a.jsonl.zst", "b.jsonl"} {
		c, err := agents.OpenFile(sess, rel)
		require.NoError(t, err)
		got, err := io.ReadAll(c.Reader)
		require.NoError(t, err)
		assert.Equal(t, data, got, rel)
		require.NoError(t, c.Close())
	}
	c, err := agents.OpenFile(sess, "a.jsonl.zst")
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Skip(int64(len(data)-10)))
	rest, err := io.ReadAll(c.Reader)
	require.NoError(t, err)
	assert.Equal(t, data[len(data)-10:], rest, "Skip passes what it holds, not its compressed bytes")

	require.NoError(t, os.Symlink(filepath.Join(root, "a.jsonl.zst"), filepath.Join(root, "l.jsonl.zst")))
	_, err = agents.OpenFile(sess, "l.jsonl.zst")
	assert.Error(t, err, "a link is never followed")
}

// A zstd bomb: 256 KiB of RLE blocks that stand for 8 GiB. It is read to MaxInflate times what was read of it
// (and a slack of a block or two), then refused: a listing of a session full of them costs what they take on disk.
func TestOpenFileBoundsABomb(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	bomb := codextest.Bomb(64<<10, '\n')
	codextest.Write(t, root, "bomb.jsonl.zst", bomb)
	n, err := readAll(t, sess, "bomb.jsonl.zst")
	require.ErrorIs(t, err, agents.ErrCompressed)
	assert.ErrorContains(t, err, "times its size")
	t.Logf("%d bytes read of the %d it stands for", n, int64(64<<10)<<17)
	assert.Less(t, n, int64(agents.MaxInflate*len(bomb)+1<<20))

	malformed, err := func() (int, error) {
		c, err := agents.OpenFile(sess, "bomb.jsonl.zst")
		require.NoError(t, err)
		defer c.Close()
		return agents.ScanLines(c.Reader, func([]byte) error { return nil })
	}()
	assert.ErrorIs(t, err, agents.ErrCompressed, "a scan stops at the bound")
	assert.Zero(t, malformed)
}

// A frame whose header claims a window of 1 GiB (or a size of 1 TiB: the window of a one-segment frame) is
// refused before the decoder makes room for it: the daemon serves in 128 MiB.
func TestOpenFileRefusesAWideWindow(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	codextest.Write(t, root, "wide.jsonl.zst", codextest.Window(30, []byte("{}\n")))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAll(t, sess, "wide.jsonl.zst")
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, agents.ErrCompressed)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(agents.MaxWindow), "no room made for the window")

	codextest.Write(t, root, "fine.jsonl.zst", codextest.Window(20, []byte("{}\n")))
	n, err := readAll(t, sess, "fine.jsonl.zst")
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
}

// A compressed file with a hole in it is read to the hole: no compressor writes one, and reading its zeros would
// cost what the file claims, not what it takes.
func TestOpenFileStopsAtAHole(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	p := codextest.Write(t, root, "sparse.jsonl.zst", codextest.Window(20, []byte("{}\n"))[:8])
	require.NoError(t, os.Truncate(p, 1<<40), "a filesystem with files of a TiB")
	_, err := readAll(t, sess, "sparse.jsonl.zst")
	assert.ErrorIs(t, err, agents.ErrCompressed)
}

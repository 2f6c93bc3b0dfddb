package main

import (
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The counting proxy counts what passes each way, once the connection ends.
func TestWireCounter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // the server: reads all the client sends, then answers 1000 bytes
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
		_, _ = c.Write(make([]byte, 1000))
	}()
	w, err := newWireCounter()
	require.NoError(t, err)
	defer w.close()
	w.target(ln.Addr().String())
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port())))
	require.NoError(t, err)
	_, err = c.Write(make([]byte, 12345))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	n, err := io.Copy(io.Discard, c)
	require.NoError(t, err)
	assert.EqualValues(t, 1000, n)
	c.Close()
	sent, recv, err := w.idle(5 * time.Second)
	require.NoError(t, err)
	assert.EqualValues(t, 12345, sent)
	assert.EqualValues(t, 1000, recv)
	w.reset()
	sent, recv, _ = w.idle(time.Second)
	assert.Zero(t, sent+recv)
}

// A copy of the session passes when its files are the same, and fails on a missing, extra or changed one.
func TestSameSession(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	s := &syncRun{rnd: rand.New(rand.NewPCG(1, 2))}
	files := map[string][]byte{
		"workspace/src/a.go":                          s.sourceText(3000),
		"workspace/assets/blob.bin":                   []byte("random enough"),
		".claude/projects/-session-workspace/x.jsonl": []byte("{}\n"),
	}
	for rel, data := range files {
		require.NoError(t, writeSyncFile(filepath.Join(a, rel), data))
		require.NoError(t, writeSyncFile(filepath.Join(b, rel), data))
	}
	require.NoError(t, writeSyncFile(filepath.Join(a, "session.json"), []byte("{}"))) // outside what is compared
	blobs, transcript := []string{"workspace/assets/blob.bin"}, ".claude/projects/-session-workspace/x.jsonl"
	assert.NoError(t, sameSession(a, b, blobs, transcript))

	require.NoError(t, os.WriteFile(filepath.Join(b, "workspace/assets/blob.bin"), []byte("random enougH"), 0o644))
	assert.ErrorContains(t, sameSession(a, b, blobs, transcript), "differs")
	require.NoError(t, os.WriteFile(filepath.Join(b, "workspace/assets/blob.bin"), []byte("random enough"), 0o644))

	require.NoError(t, writeSyncFile(filepath.Join(b, "workspace/extra"), nil))
	assert.ErrorContains(t, sameSession(a, b, blobs, transcript), "is there, not here")
	require.NoError(t, os.Remove(filepath.Join(b, "workspace/extra")))

	require.NoError(t, os.Remove(filepath.Join(b, transcript)))
	assert.ErrorContains(t, sameSession(a, b, blobs, transcript), "files there")
}

// The generated text is exactly as long as asked, and a transcript line is about 2 KB of JSON.
func TestSyncData(t *testing.T) {
	s := &syncRun{rnd: rand.New(rand.NewPCG(1, 2))}
	for _, n := range []int{0, 1, 100, 20000} {
		assert.Len(t, s.sourceText(n), n)
	}
	line, id, err := s.transcriptLine("", 0)
	require.NoError(t, err)
	assert.Len(t, id, 36)
	assert.InDelta(t, 2048, len(line), 400)
	assert.Contains(t, string(line), `"parentUuid":null`)
}

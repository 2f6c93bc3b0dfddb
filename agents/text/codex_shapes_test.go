package text

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/agentstest"
	"github.com/sessionfs/sessionfs/agents/codex"
	"github.com/sessionfs/sessionfs/agents/codex/codextest"
)

var codexDay = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// A reverted thread reads as one conversation, its rollouts in order (a Note where it was reverted), each
// entry's offset past those of the rollouts before; archived and compressed, it reads the same, and Files names
// every rollout (the text view grants what each of them grants).
func TestCodexThreadOfSeveralRollouts(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	thread, later := codextest.Thread(1), codextest.Thread(2)
	first := codextest.Rollout(thread, "/ws", codexDay, false, "first", "reverted away")
	second := codextest.Rollout(thread, "/ws", codexDay.Add(time.Hour), true, "after the revert")
	dated := filepath.Join(".codex", codextest.Dated(codexDay, ""))
	codextest.Write(t, root, filepath.Join(dated, codextest.Name(codexDay, thread, later)), second)
	codextest.Write(t, root, filepath.Join(dated, codextest.Name(codexDay, thread, "")), first)
	want := []string{"cwd /ws", "prompt::first", "reply::stub reply", "prompt::reverted away", "reply::stub reply",
		"note::Thread reverted: what follows goes on from an earlier point of it", "prompt::after the revert", "reply::stub reply"}

	c := only(t, sess, codex.Agent)
	es := entries(t, sess, codex.Agent, c)
	assert.Equal(t, want, said(es))
	assert.Greater(t, es[5].Offset, int64(len(first))-1, "the second rollout's offsets follow the first's")
	files, err := Files(sess, codex.Agent, c)
	require.NoError(t, err)
	assert.Equal(t, []string{path.Join(dated, codextest.Name(codexDay, thread, "")), path.Join(dated, codextest.Name(codexDay, thread, later))}, files)

	// codex archive, then its compression worker: the same conversation.
	archived := filepath.Join(root, ".codex", "archived_sessions")
	require.NoError(t, os.MkdirAll(archived, 0o755))
	for _, name := range []string{codextest.Name(codexDay, thread, ""), codextest.Name(codexDay, thread, later)} {
		require.NoError(t, os.Rename(filepath.Join(root, dated, name), filepath.Join(archived, name)))
	}
	p := filepath.Join(archived, codextest.Name(codexDay, thread, ""))
	codextest.Write(t, archived, path.Base(p)+".zst", codextest.Compress(t, first))
	require.NoError(t, os.Remove(p))
	c = only(t, sess, codex.Agent)
	assert.Equal(t, want, said(entries(t, sess, codex.Agent, c)))
	assert.True(t, strings.HasSuffix(c.Path, ".jsonl.zst"))
}

// log -f of a thread goes on through what Codex does to it meanwhile: a revert's new rollout, written on; its
// first rollout compressed (not read again); its rollouts archived, the last written on.
func TestCodexFollowThroughARevert(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	thread := codextest.Thread(3)
	dated := filepath.Join(root, ".codex", codextest.Dated(codexDay, ""))
	first := codextest.Write(t, dated, codextest.Name(codexDay, thread, ""), codextest.Rollout(thread, "/ws", codexDay, false, "first"))
	out, stop := follow(t, sess, codex.Agent, only(t, sess, codex.Agent))
	out.await(t, "first")

	second := codextest.Rollout(thread, "/ws", codexDay.Add(time.Hour), true, "after the revert")
	p := codextest.Write(t, dated, codextest.Name(codexDay, thread, codextest.Thread(4)), second[:len(second)/2])
	b, err := os.ReadFile(first)
	require.NoError(t, err)
	// (what it holds past what was read: a compressed rollout was whole when read, so this is never read)
	more := codextest.Rollout(thread, "/ws", codexDay, false, "never read")
	codextest.Write(t, dated, path.Base(first)+".zst", codextest.Compress(t, append(b, more[len(more)/2:]...)))
	require.NoError(t, os.Remove(first))
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(second[len(second)/2:])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out.await(t, "after the revert")

	// codex archive: the thread's rollouts move, and are read on where they went.
	archived := filepath.Join(root, ".codex", "archived_sessions")
	require.NoError(t, os.MkdirAll(archived, 0o755))
	for _, p := range []string{first + ".zst", p} {
		require.NoError(t, os.Rename(p, filepath.Join(archived, path.Base(p))))
	}
	f, err = os.OpenFile(filepath.Join(archived, path.Base(p)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(codextest.Rollout(thread, "/ws", codexDay.Add(2*time.Hour), false, "archived and on"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out.await(t, "archived and on")
	require.NoError(t, stop())
	assert.Equal(t, 1, strings.Count(out.String(), "first"), out.String())
	assert.NotContains(t, out.String(), "never read", "the compressed rollout is not read again")
	assert.Equal(t, 1, strings.Count(out.String(), "Thread reverted"))
}

// A bomb among a thread's rollouts is a Note where it stops, and the rollouts after it are read.
func TestCodexBombIsANote(t *testing.T) {
	sess, root := agentstest.OpenSession(t)
	thread := codextest.Thread(5)
	dated := filepath.Join(root, ".codex", codextest.Dated(codexDay, ""))
	good := codextest.Compress(t, codextest.Rollout(thread, "/ws", codexDay, false, "before the bomb"))
	codextest.Write(t, dated, codextest.Name(codexDay, thread, "")+".zst", append(good, codextest.Bomb(64<<10, 'x')...))
	codextest.Write(t, dated, codextest.Name(codexDay, thread, codextest.Thread(6)), codextest.Rollout(thread, "/ws", codexDay, true, "after it"))
	start := time.Now()
	var got []string
	for _, e := range entries(t, sess, codex.Agent, only(t, sess, codex.Agent)) {
		got = append(got, e.Kind.String()+":"+e.Text)
	}
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Len(t, got, 6)
	assert.Equal(t, []string{"prompt:before the bomb", "reply:stub reply"}, got[:2])
	assert.Contains(t, got[2], "note:(the rest of "+codextest.Name(codexDay, thread, "")+".zst left out: ")
	assert.Contains(t, got[2], "times its size")
	assert.Equal(t, []string{"prompt:after it", "reply:stub reply"}, got[4:])
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackSyncRemoteServesLinks: the other machine's copy of the session was written by its agents, which may
// plant anything there. A link to a secret, a link to a folder outside, a FIFO and a sparse 1 TiB file: the sync
// brings none of the outside's bytes here, writes nothing through B's links, never blocks, and refuses the huge
// file at once, with the rest synced.
func TestAttackSyncRemoteServesLinks(t *testing.T) {
	srv := startSSHD(t)
	t.Run("sessionfs there", func(t *testing.T) { remoteServesLinks(t, srv, srv.env) })
	t.Run("sftp-server there", func(t *testing.T) { remoteServesLinks(t, srv, srv.plainSFTP(), "--unconfined") })
}

func remoteServesLinks(t *testing.T, srv *sshServer, env []string, flags ...string) {
	storeA, storeB := t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	ok(t, storeB, "new", "s1")
	wsA := filepath.Join(storeA, "sessions", "s1", "workspace")
	wsB := filepath.Join(storeB, "sessions", "s1", "workspace")
	secret := hostSecret(t)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "stolen.txt"), []byte(hostMarker+"\n"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(secret, "secret"), filepath.Join(wsB, "secret")))
	require.NoError(t, os.Symlink(outside, filepath.Join(wsB, "out")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(wsB, "fifo"), 0o644))
	huge, err := os.Create(filepath.Join(wsB, "huge"))
	require.NoError(t, err)
	require.NoError(t, huge.Truncate(1<<40))
	huge.Close()
	require.NoError(t, os.WriteFile(filepath.Join(wsB, "plain.txt"), []byte("fine\n"), 0o644))
	// A's file whose folder is B's link out: pushing it must not write through the link.
	require.NoError(t, os.MkdirAll(filepath.Join(wsA, "out"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wsA, "out", "planted.txt"), []byte("planted\n"), 0o644))

	start := time.Now()
	r := cliIn(t, storeA, "", env, append([]string{"sync", "s1", "b:" + storeB}, flags...)...)
	took := time.Since(start)
	t.Logf("sync against a hostile copy: exit %d in %v: %s%s", r.code, took, r.stdout, r.stderr)
	assert.NotEqual(t, 0, r.code, "the refusals are an error")
	assert.Contains(t, r.stderr, "huge: the remote's file of 1.0 TiB would not fit here")
	assert.Contains(t, r.stderr, "out/planted.txt: workspace/out is not a folder there")
	assert.Less(t, took, 30*time.Second, "nothing blocked")

	assert.Equal(t, "fine\n", read(t, filepath.Join(wsA, "plain.txt")), "the rest is synced")
	for _, name := range []string{"secret", "fifo", "huge", "out/stolen.txt"} {
		_, err := os.Lstat(filepath.Join(wsA, name))
		assert.True(t, os.IsNotExist(err), "%s is not brought here (%v)", name, err)
	}
	assertSecretUntouched(t, secret)
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing written through B's link out")
	// Nothing of the outside's bytes anywhere in A's store.
	filepath.Walk(storeA, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			assert.NotContains(t, string(b), hostMarker, p)
		}
		return nil
	})
}

// TestSyncKilledMidTransfer: a sync killed (SIGKILL) while it sends a 256 MiB file leaves both stores as they were
// (the file is not there in part, A is untouched), and the rerun finishes and leaves no temporary file on either
// side. The same for a pull killed while it writes here.
func TestSyncKilledMidTransfer(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB := t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	wsA := filepath.Join(storeA, "sessions", "s1", "workspace")
	big := make([]byte, 256<<20)
	for i := range big {
		big[i] = byte(i*2654435761>>13) ^ byte(i>>20) // poorly compressible, made fast
	}
	require.NoError(t, os.WriteFile(filepath.Join(wsA, "big.bin"), big, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(wsA, "a.txt"), []byte("a\n"), 0o644))
	wsB := filepath.Join(storeB, "sessions", "s1", "workspace")

	killWhen(t, storeA, srv.env, []string{"sync", "push", "s1", "b:" + storeB}, func() bool {
		m, _ := filepath.Glob(filepath.Join(wsB, ".sessionfs-sync-*"))
		if len(m) == 0 {
			return false
		}
		st, err := os.Stat(m[0])
		return err == nil && st.Size() > 16<<20
	})
	_, err := os.Stat(filepath.Join(wsB, "big.bin"))
	assert.True(t, os.IsNotExist(err), "no part of big.bin under its name on B")
	st, err := os.Stat(filepath.Join(wsA, "big.bin"))
	require.NoError(t, err)
	assert.Equal(t, int64(len(big)), st.Size(), "A is as it was")

	syncOK(t, storeA, srv.env, "push", "s1", "b:"+storeB)
	assert.True(t, filesEqual(t, filepath.Join(wsA, "big.bin"), filepath.Join(wsB, "big.bin")), "the rerun finishes")
	noTemps(t, storeA, storeB)

	// A pull killed while it writes here: B's copy changed (a new big file), A pulls.
	require.NoError(t, os.WriteFile(filepath.Join(wsB, "big2.bin"), big[1<<20:], 0o644))
	killWhen(t, storeA, srv.env, []string{"sync", "pull", "s1"}, func() bool {
		m, _ := filepath.Glob(filepath.Join(wsA, ".big2.bin.tmp-*"))
		if len(m) == 0 {
			return false
		}
		st, err := os.Stat(m[0])
		return err == nil && st.Size() > 16<<20
	})
	_, err = os.Stat(filepath.Join(wsA, "big2.bin"))
	assert.True(t, os.IsNotExist(err), "no part of big2.bin under its name on A")
	syncOK(t, storeA, srv.env, "pull", "s1")
	assert.True(t, filesEqual(t, filepath.Join(wsA, "big2.bin"), filepath.Join(wsB, "big2.bin")), "the rerun finishes")
	noTemps(t, storeA, storeB)
}

// killWhen starts sessionfs with args in store and kills it (SIGKILL) as soon as cond holds (at most 60 s).
func killWhen(t *testing.T, store string, env []string, args []string, cond func() bool) {
	t.Helper()
	cmd := cliCommand(store, env, args...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("sessionfs %v ended (%v) before it could be killed mid-transfer", args, err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the transfer never began")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-done
	t.Logf("killed sessionfs %v mid-transfer", args)
}

func filesEqual(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	require.NoError(t, err)
	y, err := os.ReadFile(b)
	require.NoError(t, err)
	return string(x) == string(y)
}

// noTemps checks that no temporary file of a sync or of a write is left in the stores' sessions.
func noTemps(t *testing.T, stores ...string) {
	t.Helper()
	for _, s := range stores {
		filepath.Walk(filepath.Join(s, "sessions"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && (strings.HasPrefix(fi.Name(), ".sessionfs-sync-") || strings.Contains(fi.Name(), ".tmp-")) {
				t.Errorf("a temporary file is left: %s", p)
			}
			return nil
		})
	}
}

// TestAttackSyncRemoteRacesLinks: an agent on the other machine swaps a folder of its session for a link out, and
// back, as fast as it can, while syncs push files into that folder. With sessionfs there, every access is made
// beneath the session's folder: nothing ever lands outside, however often the swap comes at the worst moment.
// (With only OpenSSH's sftp-server there, the client's checks can lose this race: the CLI says so; the count of
// files that landed outside that way is logged, not asserted.)
func TestAttackSyncRemoteRacesLinks(t *testing.T) {
	srv := startSSHD(t)
	for _, mode := range []struct {
		name     string
		env      []string
		confined bool
	}{{"sessionfs there", srv.env, true}, {"sftp-server there", srv.plainSFTP(), false}} {
		t.Run(mode.name, func(t *testing.T) {
			storeA, storeB := t.TempDir(), t.TempDir()
			ok(t, storeA, "new", "s1")
			ok(t, storeB, "new", "s1")
			outside := t.TempDir()
			dA := filepath.Join(storeA, "sessions", "s1", "workspace", "d")
			dB := filepath.Join(storeB, "sessions", "s1", "workspace", "d")
			require.NoError(t, os.MkdirAll(dA, 0o755))
			require.NoError(t, os.MkdirAll(dB, 0o755))
			stop := make(chan struct{})
			swaps := make(chan int)
			go func() { // the agent on B
				n := 0
				link, real := dB+".link", dB+".real"
				os.Symlink(outside, link)
				for {
					select {
					case <-stop:
						swaps <- n
						return
					default:
					}
					// d is a folder, then a link out, then a folder again, each by rename (atomic).
					os.Rename(dB, real)
					os.Rename(link, dB)
					os.Rename(dB, link)
					os.Rename(real, dB)
					n++
				}
			}()
			const rounds = 15
			for i := range rounds {
				for j := range 20 {
					name := filepath.Join(dA, "f"+strings.Repeat("x", i%3)+string(rune('a'+j))+".txt")
					require.NoError(t, os.WriteFile(name, []byte(time.Now().String()+"\n"), 0o644))
				}
				cliIn(t, storeA, "", mode.env, "sync", "push", "s1", "b:"+storeB, "--unconfined") // a refusal is fine; a write outside is not
			}
			close(stop)
			n := <-swaps
			ents, _ := os.ReadDir(outside)
			t.Logf("%s: %d syncs of 20 files each while B's agent swapped the folder %d times: %d files landed outside", mode.name, rounds, n, len(ents))
			if mode.confined {
				assert.Empty(t, ents, "nothing written through B's link")
			}
		})
	}
}

// TestSyncRefusesUnconfinedRemote: a machine without sessionfs can only serve the session through its
// sftp-server, which follows links: sync says so and does nothing, unless --unconfined.
func TestSyncRefusesUnconfinedRemote(t *testing.T) {
	srv := startSSHD(t)
	storeA, storeB := t.TempDir(), t.TempDir()
	ok(t, storeA, "new", "s1")
	r := cliIn(t, storeA, "", srv.plainSFTP(), "sync", "s1", "b:"+storeB)
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "sessionfs is not installed on the other machine")
	assert.Contains(t, r.stderr, "--unconfined")
	_, err := os.Stat(filepath.Join(storeB, "sessions"))
	assert.True(t, os.IsNotExist(err), "nothing written there")
	r = cliIn(t, storeA, "", srv.plainSFTP(), "sync", "s1", "b:"+storeB, "--unconfined")
	assert.Equal(t, 0, r.code, r.stderr)
	_, err = os.Stat(filepath.Join(storeB, "sessions", "s1", "session.json"))
	assert.NoError(t, err, "synced with --unconfined")
}

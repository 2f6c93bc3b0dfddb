package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackViewBindSwap: while the host appends through a transcript view (each append through FUSE asks for the
// view to be bound, mount/viewbinds.go), the session's own process (uid 65534, owning its files in the store)
// exchanges its canonical transcript folder with a link to a root-only host folder, again and again (renameat2
// RENAME_EXCHANGE). Every view bind made shows the session's own canonical folder; none shows the host folder or
// another session's, nothing is written there, and the other session has nothing mounted in it.
func TestAttackViewBindSwap(t *testing.T) {
	needRootMount(t)
	store := t.TempDir()
	secret := hostSecret(t)
	ok(t, store, "new", "other")
	ids := []string{"s1", "s2", "s3"}
	targets := map[string]string{ // where each session's link points: the host's folder, another session's
		"s1": secret,
		"s2": filepath.Join(store, "sessions", "other", ".claude", "projects", "-session-workspace"),
		"s3": secret,
	}
	for _, id := range ids {
		ok(t, store, "new", id)
		projects := filepath.Join(store, "sessions", id, ".claude", "projects")
		require.NoError(t, os.WriteFile(filepath.Join(projects, "-session-workspace", "t.jsonl"), []byte("{}\n"), 0o600))
		require.NoError(t, os.Symlink(targets[id], filepath.Join(projects, "swap")))
		giveSession(t, store, id)
	}
	m := mount(t, store)
	for _, id := range ids {
		projects := filepath.Join(store, "sessions", id, ".claude", "projects")
		startExchanger(t, filepath.Join(projects, "-session-workspace"), filepath.Join(projects, "swap"))
	}

	const bound = 100000
	deadline := time.Now().Add(30 * time.Second)
	tries, appended, refused := 0, 0, 0
	seen := map[string]string{} // every view bind seen, by mount id: mountpoint and root
	for tries < bound && time.Now().Before(deadline) {
		id := ids[tries%len(ids)]
		tries++
		f, err := os.OpenFile(filepath.Join(m.session(id), ".claude", "projects", "-home-u-proj", "t.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			refused++ // the canonical name was the link when looked up: no view there
		} else {
			_, _ = f.WriteString("{}\n")
			_ = f.Close()
			appended++
		}
		for mid, e := range viewBindsUnder(t, m.mnt) {
			if _, ok := seen[mid]; !ok {
				seen[mid] = e
				// Taken back at once (a lookup of another name), so that the next append asks again.
				sid, _, _ := strings.Cut(strings.TrimPrefix(e, m.mnt+"/sessions/"), "/")
				_, _ = os.Stat(filepath.Join(m.session(sid), ".claude", "projects", "-home-u-other"))
			}
		}
	}
	t.Logf("%d appends through views while the sessions exchanged their canonical folder with links out: "+
		"%d went through, %d met the link; %d view binds made, each of its own session's canonical folder",
		tries, appended, refused, len(seen))
	for _, b := range seen {
		id := strings.SplitN(strings.TrimPrefix(b, m.mnt+"/sessions/"), "/", 2)[0]
		// The folder bound is the session's own, under either of the names the exchanger flips it between.
		projects := filepath.Join(store, "sessions", id, ".claude", "projects")
		assert.True(t, strings.HasSuffix(b, " shows "+projects+"/-session-workspace") || strings.HasSuffix(b, " shows "+projects+"/swap"),
			"a view bind shows what is not its session's canonical folder: %s", b)
	}
	assert.NotEmpty(t, seen, "views were bound meanwhile (the race is real)")
	assert.Positive(t, refused, "some appends met the link (the exchanger raced them)")
	assertBindsInside(t, m, store)
	assertNothingMountedIn(t, m.session("other"), secret, targets["s2"])
	assertSecretUntouched(t, secret)
	for _, id := range ids {
		assert.NotContains(t, fmt.Sprint(mountsUnder(t, m.session(id))), secret, "nothing of the host's mounted in %s", id)
	}
}

// viewBindsUnder lists the transcript view binds beneath mnt, by mount id: "<mountpoint> shows <root>".
func viewBindsUnder(t *testing.T, mnt string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], mnt+"/sessions/") && strings.Contains(f[4], "/.claude/projects/") {
			out[f[0]] = f[4] + " shows " + f[3]
		}
	}
	return out
}

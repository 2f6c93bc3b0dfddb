package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfinedServerContainsASlip runs a test build of the daemon whose serving process, on request, uses a host
// path by name (mount/nodes/fault_on.go), as a slip in its code would: the kernel must refuse it (Landlock,
// seccomp), and the mount must go on serving. The same build unconfined does reach the host's files, which shows
// the hook works and the refusal is the confinement's.
func TestConfinedServerContainsASlip(t *testing.T) {
	need(t, os.Geteuid() == 0, "the confined serving process is root's (a normal user's mount is served by one unprivileged process)")
	exe := faultBuild(t)

	// A root-only folder outside the store, and a root-only file: what a slip would reach.
	private := filepath.Join(t.TempDir(), "root-only")
	require.NoError(t, os.Mkdir(private, 0o700))
	secret := filepath.Join(private, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	planted := filepath.Join(private, "planted")

	probe := func(m *mounted, op, path string) error {
		_, err := os.Lstat(filepath.Join(m.mnt, "sessions", faultPrefix+op+"="+url.PathEscape(path)))
		return err
	}

	t.Run("unconfined, the hook reaches the host", func(t *testing.T) {
		m := mountWith(t, exe, t.TempDir(), "--confine", "off")
		assert.ErrorIs(t, probe(m, "read", secret), syscall.EEXIST, "EEXIST: the daemon opened it")
		assert.ErrorIs(t, probe(m, "write", planted), syscall.EEXIST)
		assert.FileExists(t, planted)
		require.NoError(t, os.Remove(planted))
	})

	t.Run("confined, the kernel refuses", func(t *testing.T) {
		m := mountWith(t, exe, t.TempDir(), "--allow-other", "--verbose")
		pid := servingPID(t, m.mnt)
		// Exactly the capabilities README lists: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETGID, SETUID, SYS_ADMIN,
		// on every thread (each has its own sets, and its own seccomp filter).
		want := uint64(1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<6 | 1<<7 | 1<<21)
		threads := threadStatus(t, pid)
		require.NotEmpty(t, threads)
		for _, status := range threads {
			assert.Equal(t, "2", status["Seccomp"], "seccomp filter mode")
			assert.Equal(t, "1", status["NoNewPrivs"])
			for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
				got, err := strconv.ParseUint(status[set], 16, 64)
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s = %s", set, status[set])
				for name, bit := range map[string]uint{"NET_ADMIN": 12, "SYS_MODULE": 16, "SYS_RAWIO": 17, "SYS_PTRACE": 19, "SYS_BOOT": 22, "BPF": 39, "SETPCAP": 8} {
					assert.Zero(t, got&(1<<bit), "%s holds %s", set, name)
				}
			}
			assert.Equal(t, "0000000000000000", status["CapAmb"])
			assert.Equal(t, "0000000000000000", status["CapInh"])
		}
		// The helper holds what it uses: those, SYS_PTRACE to list the processes that keep the mount busy, and
		// SYS_NICE to leave the idle scheduling class it starts in.
		hpid := helperPID(t, pid)
		helper := procStatus(t, hpid)
		// Started in the idle scheduling class (its start-up must not slow the daemon's), it leaves it once up.
		policies := func() (out []string) {
			tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", hpid))
			require.NoError(t, err)
			for _, task := range tasks {
				b, _ := os.ReadFile(task)
				_, rest, _ := strings.Cut(string(b), ") ") // after the command's name, which may hold spaces
				if f := strings.Fields(rest); len(f) > 38 {
					out = append(out, f[38]) // field 41: the scheduling policy
				}
			}
			return out
		}
		eventually(t, 5*time.Second, func() bool {
			p := policies()
			return len(p) > 0 && !slices.ContainsFunc(p, func(s string) bool { return s != "0" })
		}, "every thread of the helper leaves SCHED_IDLE for SCHED_NORMAL: %v", policies())
		for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
			got, err := strconv.ParseUint(helper[set], 16, 64)
			require.NoError(t, err)
			assert.Equal(t, want|1<<19|1<<23, got, "the helper's %s = %s", set, helper[set])
		}
		assert.Contains(t, m.log.String(), "the serving process is confined: Landlock ABI")
		r := cli(t, m.store, "doctor")
		assert.Regexp(t, fmt.Sprintf(`(?m)^OK\s+confine\s+serving process %d of %s: seccomp filter \(an allow-list\); capabilities cap_chown cap_dac_override cap_fowner cap_fsetid cap_setgid cap_setuid cap_sys_admin; Landlock ABI \d+`, pid, regexp.QuoteMeta(m.mnt)), r.stdout)

		assert.ErrorIs(t, probe(m, "read", "/etc/shadow"), syscall.EACCES, "Landlock: /etc/shadow")
		assert.ErrorIs(t, probe(m, "read", secret), syscall.EACCES, "Landlock: a root-only file")
		assert.ErrorIs(t, probe(m, "write", planted), syscall.EACCES, "Landlock: a root-only folder")
		assert.NoFileExists(t, planted)
		assert.ErrorIs(t, probe(m, "mount", private), syscall.EPERM, "seccomp: mount(2)")
		assert.ErrorIs(t, probe(m, "unshare", "/"), syscall.EPERM, "seccomp: unshare(2)")
		assert.False(t, isFUSEMount(private), "nothing was mounted")

		// The rest of the mount serves on: a session made, written, read, bound, removed.
		s := m.session("after")
		require.NoError(t, os.Mkdir(s, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(s, "workspace", "f"), []byte("still serving"), 0o644))
		got, err := os.ReadFile(filepath.Join(s, "workspace", "f"))
		require.NoError(t, err)
		assert.Equal(t, "still serving", string(got))
		transcripts := filepath.Join(s, ".claude", "projects", "-any-cwd")
		require.NoError(t, os.MkdirAll(transcripts, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(transcripts, "t.jsonl"), []byte("{}\n"), 0o644))
		// A file another user makes through FUSE is still that user's (setfsuid under the confinement).
		require.NoError(t, os.Chmod(transcripts, 0o777))
		openUp(t, m.mnt)
		nobody := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "touch", filepath.Join(transcripts, "theirs.jsonl"))
		out, err := nobody.CombinedOutput()
		require.NoError(t, err, "%s", out)
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(filepath.Join(m.store, "sessions", "after", ".claude", "projects", "-session-workspace", "theirs.jsonl"), &st))
		assert.Equal(t, uint32(65534), st.Uid, "made with the caller's identity")
		require.NoError(t, os.RemoveAll(s))
		assert.Equal(t, pid, servingPID(t, m.mnt), "the same serving process")
	})
}

// A store on overlayfs, where the kernel does not stack FUSE passthrough: the serving process reads the store's
// files for the callers, splicing them through a pipe that go-fuse empties into /dev/null, which it opened at its
// first read. Confined (Landlock: only the store), that open failed and go-fuse panicked: the mount ended at its
// first read. It must serve the read, and go on serving.
func TestConfinedServesReadsWithoutPassthrough(t *testing.T) {
	need(t, os.Geteuid() == 0, "the confined serving process is root's, and an overlayfs store is mounted by root")
	dir := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "store"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	store := filepath.Join(dir, "store")
	err := syscall.Mount("overlay", store, "overlay", 0, fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", dir, dir, dir))
	need(t, err == nil, fmt.Sprintf("an overlayfs mount: %v", err))
	t.Cleanup(func() { _ = syscall.Unmount(store, syscall.MNT_DETACH) }) // after the sessionfs mount's own cleanup
	m := mount(t, store)
	pid := servingPID(t, m.mnt)
	s := m.session("s")
	require.NoError(t, os.Mkdir(s, 0o755))
	want := []byte(strings.Repeat("read through the serving process\n", 10000))
	f := filepath.Join(s, ".claude", "notes.json") // served through FUSE, not a bind
	require.NoError(t, os.WriteFile(f, want, 0o644))
	got, err := os.ReadFile(f)
	require.NoError(t, err, "%s", m.log)
	assert.Equal(t, want, got)
	assert.NotContains(t, m.log.String(), "panic")
	assert.Equal(t, pid, servingPID(t, m.mnt), "the same serving process")
	assert.True(t, isFUSEMount(m.mnt) && !staleMount(m.mnt), "still serving")
}

package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runner is a `sessionfs exec|run|resume` started in the background, in its own process group so that a test can
// kill it with its command, as a host's death would.
type runner struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func startRunner(t *testing.T, store string, env []string, args ...string) *runner {
	t.Helper()
	r := &runner{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	r.cmd.Env = append(append(os.Environ(), "SESSIONFS_STORE="+store), env...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.kill() })
	return r
}

// kill ends the runner and its command with SIGKILL and waits for it.
func (r *runner) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

func (r *runner) exited(within time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(within):
		return false
	}
}

// refusal is the line a second runner prints, and its exit code.
var refusal = regexp.MustCompile(`(?m)^sessionfs: session web is running on host \S+ \(pid (\d+)\) since \d\d:\d\d \(--wait waits for it\)$`)

// holding is what a holder's command says first: it runs, so it has the lease.
const holding = "echo holding the lease"

// waitRefused waits until holder (whose command starts with holding) runs, then checks that a second runner of
// session web is refused, naming the holder.
func waitRefused(t *testing.T, store string, holder *runner) {
	t.Helper()
	eventually(t, 20*time.Second, func() bool { return strings.Contains(holder.out.String(), "holding the lease") },
		"the holder never ran: %s", holder.out)
	r := cli(t, store, "exec", "web", "--", "true")
	require.Equal(t, 125, r.code, "a second runner is refused: %s", r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "refused before it does anything else: %q", r.stderr)
	m := refusal.FindStringSubmatch(r.stderr)
	require.NotNil(t, m, "refusal: %q", r.stderr)
	assert.Equal(t, strconv.Itoa(holder.cmd.Process.Pid), m[1], "the refusal names the holder's pid")
}

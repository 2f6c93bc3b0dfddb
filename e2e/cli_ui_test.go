package e2e

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUICommandLine: sessionfs ui prints its URL as the first line of stdout, warns on stderr when --listen is
// not loopback, exits 0 on SIGTERM, and refuses an address it cannot listen on and a store that does not exist.
func TestUICommandLine(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")

	for _, c := range []struct {
		listen string
		warns  bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		cmd := exec.Command(bin, "ui", "--listen", c.listen)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		var stderr uiCommandOutput
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
			}
		})
		first := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			first <- line
		}()
		var line string
		select {
		case line = <-first:
		case <-time.After(30 * time.Second): // a hang, not a speed
			t.Fatalf("ui --listen %s printed no URL; stderr: %s", c.listen, stderr.String())
		}
		u, err := url.Parse(strings.TrimSpace(line))
		require.NoError(t, err, line)
		assert.Equal(t, "http", u.Scheme, line)
		assert.Equal(t, "127.0.0.1", u.Hostname(), "a URL a browser on this host opens: %s", line)
		assert.Regexp(t, `^[0-9a-f]{32}$`, u.Query().Get("token"), "128 random bits")
		resp, body := httpGet(t, "http://"+u.Host+u.Path, nil) // the list, beneath the URL's path
		assert.Equal(t, 403, resp.StatusCode, "no token: %s", body)
		resp, _ = httpGet(t, u.String(), nil)
		assert.Equal(t, 303, resp.StatusCode, "the printed URL")

		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			assert.NoError(t, err, "exit 0 on SIGTERM; stderr: %s", stderr.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("ui did not exit on SIGTERM; stderr: %s", stderr.String())
		}
		if c.warns {
			assert.Contains(t, stderr.String(), "warning: ", c.listen)
			assert.Contains(t, stderr.String(), "is not a loopback address")
		} else {
			assert.NotContains(t, stderr.String(), "warning", c.listen)
		}
	}

	r := cli(t, store, "ui", "--listen", "nonsense")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--listen HOST:PORT")
	r = cli(t, t.TempDir()+"/none", "ui")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "no store")
	assert.Empty(t, r.stdout, "no URL for a store that is not there")
}

// uiCommandOutput is a bytes.Buffer a process writes while the test reads it.
type uiCommandOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *uiCommandOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *uiCommandOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMovingDocSync runs docs/moving.md's walk-through of sync as written: each command of its first shell block
// under "## Sync with another machine", on the machine its "# on ..." line names. The laptop and build are two
// stores of this machine, each mounted, a real sshd between them (build's store stands at /srv/sessionfs in the
// text), the real claude CLI on PATH against the API stub. Build's log must show every turn of both, in order,
// and both stores hold the same conversation.
func TestMovingDocSync(t *testing.T) {
	needFUSE(t)
	srv := startSSHD(t)
	claude := claudeBin(t)
	api := stub(t, "127.0.0.1:0")
	stores := map[string]string{"laptop": t.TempDir(), "build": t.TempDir()}
	for _, s := range stores {
		mount(t, s)
	}
	var last string
	on := ""
	for _, line := range docBlock(t, "../docs/moving.md", "## Sync with another machine") {
		if m, ok := strings.CutPrefix(line, "# on "); ok {
			on = strings.TrimPrefix(m, "the ")
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		require.Contains(t, stores, on, "a command before any \"# on ...\" line: %s", line)
		line = strings.ReplaceAll(line, "/srv/sessionfs", stores["build"])
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = t.TempDir()
		// sessionfs and claude on PATH, as installed.
		cmd.Env = append(append(withPath(claudeEnv(t, api.URL), claude), "SESSIONFS_STORE="+stores[on]), srv.env...)
		cmd.Env[0] = "PATH=" + filepath.Dir(bin) + ":" + strings.TrimPrefix(cmd.Env[0], "PATH=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "on %s: %s\n%s", on, line, out)
		t.Logf("on %s: %s\n%s", on, line, strings.TrimSpace(string(out)))
		last = string(out)
	}
	at := -1
	for _, turn := range []string{"start on the laptop", "carry on on build", "a turn on the laptop meanwhile"} {
		i := strings.Index(last, turn)
		assert.Greater(t, i, at, "build's log shows %q in order", turn)
		at = i
	}
	canon := func(store string) string {
		files := transcripts(t, filepath.Join(store, "sessions", "fix-login", ".claude", "projects", "-session-workspace"))
		require.Len(t, files, 1, "one conversation in %s", store)
		return read(t, files[0])
	}
	assert.Equal(t, canon(stores["laptop"]), canon(stores["build"]), "both stores hold the same conversation")
}

// docBlock is the first ```sh block after the heading in the markdown file p, one line each (comments kept).
func docBlock(t *testing.T, p, heading string) []string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	seen, in := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			seen = true
		case seen && !in && line == "```sh":
			in = true
		case in && line == "```":
			return out
		case in && strings.TrimSpace(line) != "":
			out = append(out, strings.TrimSpace(line))
		}
	}
	t.Fatalf("%s: no shell block under %q", p, heading)
	return nil
}

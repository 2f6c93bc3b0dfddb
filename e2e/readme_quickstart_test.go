package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentImage is what make agent-image builds and the README's quick start runs.
const agentImage = "sessionfs-agent"

// TestREADMEQuickStart runs README.md's quick start as written: each command of its shell blocks, in order, in
// one bash, with HOME a fresh folder (so ~/agent-sessions and the default store are the test's own), sessionfs
// and the pinned claude CLI on PATH, and the Messages API stub as Claude's API. It then checks that the store
// holds one session with one conversation, carried on from the session's workspace, from a folder outside the
// session, and in a container. A README whose commands stop working fails it.
func TestREADMEQuickStart(t *testing.T) {
	needFUSE(t)
	commands := quickStartCommands(t, "../README.md")
	require.NotEmpty(t, commands, "README.md's quick start has no shell commands")
	claude := claudeBin(t)
	_, err := exec.LookPath("bash")
	require.NoError(t, err)

	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer docker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, perr := docker.Ping(ctx)
	cancel()
	need(t, perr == nil, "Docker: no engine answers (start dockerd; .ci/run does)")
	// The README's install step builds the image (kept while its inputs are unchanged: a few seconds then).
	needImageBuild(t)
	t.Logf("make agent-image: %s", lastLines(buildCommand(t, 15*time.Minute, nil, "make", "--no-print-directory", "agent-image"), 1))

	// The stub listens on the bridge's gateway, an address of this host that containers on the default network
	// reach too: the same ANTHROPIC_BASE_URL serves claude on the host and in the container.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	bridge, err := docker.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	cancel()
	require.NoError(t, err, "the engine's default bridge network")
	api := stub(t, net.JoinHostPort(bridgeGateway(t, bridge), "0"))

	home := quickStartHome(t)
	binDir := filepath.Join(home, ".quickstart-bin")
	require.NoError(t, os.MkdirAll(binDir, 0o755))
	installSessionfs(t, binDir)
	require.NoError(t, os.Symlink(claude, filepath.Join(binDir, "claude")))
	env := []string{
		"HOME=" + home,
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin",
		"ANTHROPIC_BASE_URL=" + api.URL,
		"ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"LANG=C.UTF-8",
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	t.Cleanup(func() { quickStartCleanup(t, home, env) })

	out, failed := runQuickStart(t, commands, home, env)
	t.Logf("the quick start, as run:\n%s", out)
	if failed != "" {
		t.Fatalf("README.md's quick start: %s", failed)
	}
	assert.NotContains(t, out, "No conversation found")

	// One session, holding one conversation that every step carried on.
	store := filepath.Join(home, ".local", "share", "sessionfs")
	sessions, err := os.ReadDir(filepath.Join(store, "sessions"))
	require.NoError(t, err, "the quick start made no store at the default place")
	var ids []string
	for _, e := range sessions {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			ids = append(ids, e.Name())
		}
	}
	require.Len(t, ids, 1, "the quick start makes one session")
	id := ids[0]
	canonical := filepath.Join(store, "sessions", id, ".claude", "projects", "-session-workspace")
	files := transcripts(t, canonical)
	require.Len(t, files, 1, "one conversation, carried on from every folder (not a new one per folder)")
	cwds := transcriptCwds(t, files[0])
	workspace := filepath.Join(home, "agent-sessions", "sessions", id, "workspace")
	assert.Contains(t, cwds, workspace, "begun in the session's workspace on the mount")
	assert.Contains(t, cwds, "/session/workspace", "carried on in a container")
	var elsewhere []string
	for c := range cwds {
		if c != "/session/workspace" && !strings.HasPrefix(c, filepath.Join(home, "agent-sessions", "sessions", id)) {
			elsewhere = append(elsewhere, c)
		}
	}
	assert.NotEmpty(t, elsewhere, "carried on from a folder outside the session (cwds: %v)", cwds)
}

// quickStartCommands returns the commands of the shell blocks of README's "## Quick start" section, as written:
// one per line, a line ending in a backslash joined with the next, blank and comment lines left out.
func quickStartCommands(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	require.NoError(t, err)
	defer f.Close()
	var cmds []string
	in, fence, cont := false, false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !fence && strings.HasPrefix(line, "## "):
			in = line == "## Quick start" || line == "## What the agents said"
		case in && !fence && (line == "```sh" || line == "```bash"):
			fence = true
		case fence && line == "```":
			fence = false
		case fence:
			line = cont + line
			if strings.HasSuffix(line, "\\") {
				cont = strings.TrimSuffix(line, "\\") + " "
				continue
			}
			cont = ""
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
				cmds = append(cmds, line)
			}
		}
	}
	require.NoError(t, sc.Err())
	return cmds
}

// runQuickStart runs commands one by one in one bash (so cd, eval and variables carry over, as in a terminal),
// stdin /dev/null, and stops at the first that fails. It returns what they printed and, on failure, which
// command failed with what exit code.
func runQuickStart(t *testing.T, commands []string, home string, env []string) (string, string) {
	t.Helper()
	var script strings.Builder
	for i, c := range commands {
		fmt.Fprintf(&script, "printf '%%s\\n' %s\n", shellQuote("$ "+c))
		fmt.Fprintf(&script, "%s\n", c)
		fmt.Fprintf(&script, "__rc=$?; if [ $__rc -ne 0 ]; then echo \"quickstart: command %d failed with exit $__rc\"; exit 90; fi\n", i)
	}
	scriptPath := filepath.Join(home, ".quickstart.sh")
	require.NoError(t, os.WriteFile(scriptPath, []byte(script.String()), 0o644))
	outPath := filepath.Join(t.TempDir(), "out")
	outFile, err := os.Create(outPath)
	require.NoError(t, err)
	defer outFile.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", scriptPath)
	cmd.Dir = home
	cmd.Env = env
	// A file, not a pipe: the mount's daemon, started by the quick start, must not keep the test waiting.
	cmd.Stdout, cmd.Stderr = outFile, outFile
	runErr := cmd.Run()
	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	out := string(b)
	if runErr == nil {
		return out, ""
	}
	var n, code int
	for _, l := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(l, "quickstart: command %d failed with exit %d", &n, &code); err == nil {
			return out, fmt.Sprintf("%q exited %d", commands[n], code)
		}
	}
	return out, fmt.Sprintf("bash: %v", runErr)
}

// quickStartHome makes the newcomer's HOME. As a normal user the quick start's mount --allow-other needs
// user_allow_other in /etc/fuse.conf (the README's install step), which a test does not change.
func quickStartHome(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		b, _ := os.ReadFile("/etc/fuse.conf")
		need(t, regexp.MustCompile(`(?m)^\s*user_allow_other`).Match(b),
			"as a normal user, the quick start's mount --allow-other needs user_allow_other in /etc/fuse.conf")
	}
	home, err := os.MkdirTemp("", "sessionfs-quickstart-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	return home
}

// quickStartCleanup unmounts what the quick start mounted, lazily if sessionfs unmount could not.
func quickStartCleanup(t *testing.T, home string, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(home, ".quickstart-bin", "sessionfs"), "unmount")
	cmd.Env = env
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("sessionfs unmount: %v: %s", err, out)
	}
	mnt := filepath.Join(home, "agent-sessions")
	if isFUSEMount(mnt) || staleMount(mnt) {
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
}

// transcriptCwds is the set of cwds a transcript's lines were written in.
func transcriptCwds(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	cwds := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		var e struct {
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Cwd != "" {
			cwds[e.Cwd] = true
		}
	}
	return cwds
}

// installSessionfs copies the binary under test, and the whole CLI it runs for the backends' commands, into dir
// as make install does: dir/sessionfs and dir/sessionfs-backends.
func installSessionfs(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(dir, "sessionfs")
	copyExecutable(t, bin, dst)
	copyExecutable(t, backendsOf(bin), backendsOf(dst))
	return dst
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// bridgeGateway is the address of this host on the engine's default bridge: its IPAM gateway, or, where the engine
// leaves that out of the inspection (docker.io 20.10 on a fresh /var/lib/docker: Gateway ""), the IPv4 address of
// the bridge's interface (docker0). An empty one made the stub listen on every address, and the container's claude
// was given http://[::]:PORT (EADDRNOTAVAIL).
func bridgeGateway(t *testing.T, bridge network.Inspect) string {
	t.Helper()
	for _, c := range bridge.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway
		}
	}
	name := bridge.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	iface, err := net.InterfaceByName(name)
	require.NoError(t, err, "the bridge network has no gateway, nor an interface %s", name)
	addrs, err := iface.Addrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	t.Fatalf("the bridge's interface %s has no IPv4 address", name)
	return ""
}

package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sshServer is a real OpenSSH server of the test's own on 127.0.0.1: its own host key, one user key, and a client
// config naming it "b" (the other machine), which env hands to sessionfs as $SESSIONFS_SSH.
type sshServer struct {
	dir  string
	port int
	env  []string // SESSIONFS_SSH=ssh -F <config>, and this build as sessionfs there
	ssh  []string // the ssh command line that reaches it (append the remote command)
}

// startSSHD starts sshd for the test and stops it when the test ends (only the process it started).
func startSSHD(t *testing.T) *sshServer {
	t.Helper()
	sshd := "/usr/sbin/sshd"
	_, err := os.Stat(sshd)
	need(t, err == nil, "OpenSSH's server not installed (apt-get install openssh-server)")
	_, err = exec.LookPath("ssh")
	need(t, err == nil, "OpenSSH's client not installed (apt-get install openssh-client)")
	dir := t.TempDir()
	for _, k := range []string{"host", "user"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", filepath.Join(dir, k)).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user.pub"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600))
	// sshd's privilege separation needs its folder; a machine that never ran sshd lacks it.
	require.NoError(t, os.MkdirAll("/run/sshd", 0o755))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %[2]s/host
PidFile %[2]s/sshd.pid
AuthorizedKeysFile %[2]s/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp /usr/lib/openssh/sftp-server
`, port, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600))
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	require.NoError(t, err)
	known := fmt.Sprintf("[127.0.0.1]:%d %s", port, strings.Join(strings.Fields(string(hostPub))[:2], " "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known+"\n"), 0o600))
	me, err := user.Current()
	require.NoError(t, err)
	client := fmt.Sprintf(`Host b build
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %[3]s/user
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %[3]s/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
`, port, me.Username, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte(client), 0o600))

	log, err := os.Create(filepath.Join(dir, "sshd.log"))
	require.NoError(t, err)
	cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	s := &sshServer{dir: dir, port: port, ssh: []string{"ssh", "-F", filepath.Join(dir, "config"), "b"}}
	// The other machine has sessionfs (this build): sync runs it there to serve the session beneath its folder.
	s.env = []string{"SESSIONFS_SSH=ssh -F " + filepath.Join(dir, "config"), "SESSIONFS_REMOTE_SESSIONFS=" + bin}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.Command(s.ssh[0], append(s.ssh[1:], "true")...).CombinedOutput()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			t.Fatalf("sshd did not answer: %v %s\nsshd's log:\n%s", err, out, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// plainSFTP is env for a remote without sessionfs: OpenSSH's sftp-server serves the session.
func (s *sshServer) plainSFTP() []string {
	return []string{s.env[0], "SESSIONFS_REMOTE_SESSIONFS=/nonexistent/sessionfs"}
}

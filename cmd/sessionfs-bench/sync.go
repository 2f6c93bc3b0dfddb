package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// The sync workload: `sessionfs sync push` of a session (a workspace of source-like files and a few binary blobs,
// and a Claude transcript) to another store over ssh, against rsync -a of the same folder over the same ssh, both
// to a real OpenSSH server of the bench's own on 127.0.0.1: a first sync into an empty store, then a sync of one
// line appended to the transcript. Bytes on the wire are counted by a TCP proxy of the bench's between the ssh
// client and sshd (the client config's Port is the proxy's): the same count for both tools, the ssh stream itself
// (handshake, encryption and, where asked for, ssh's compression included), which neither tool's own figures are.

// syncConfig is the sync workload's flags.
type syncConfig struct {
	only       bool
	runs       int
	workspace  int64 // bytes of the session's workspace
	transcript int64 // bytes of its transcript
	textFiles  int   // source-like files of the workspace
}

func syncFlags(c *syncConfig) {
	flag.BoolVar(&c.only, "sync-only", false, "run only the sync workload (sessionfs sync push over ssh on 127.0.0.1 against rsync -a)")
	flag.IntVar(&c.runs, "sync-runs", 5, "rounds of the sync workload (each a first sync into empty stores, then a one-line change), interleaved")
	flag.Int64Var(&c.workspace, "sync-workspace", 100<<20, "bytes of the synced session's workspace (40% source-like text files, 60% incompressible blobs)")
	flag.Int64Var(&c.transcript, "sync-transcript", 20<<20, "bytes of the synced session's transcript (JSON lines of about 2 KB)")
	flag.IntVar(&c.textFiles, "sync-files", 2000, "source-like text files in the synced session's workspace")
}

// syncTool is one way of carrying the session over: sessionfs sync push, or rsync.
type syncTool struct {
	key string
	// run carries store A's session to the store dest (to dest/sessions/s1), and says what it moved.
	run func(s *syncRun, dest string) (said string, err error)
}

// syncPhases, in the order each round runs them.
var syncPhases = []string{"first sync", "one line appended"}

// syncResult is the sync workload's figures: per phase and tool, each round's.
type syncResult struct {
	Files           int           `json:"files"`
	WorkspaceBytes  int64         `json:"workspace_bytes"`
	BlobBytes       int64         `json:"blob_bytes"`
	TranscriptBytes int64         `json:"transcript_bytes"`
	TranscriptLines int           `json:"transcript_lines"`
	Rounds          int           `json:"rounds"`
	Tools           []string      `json:"tools"`
	Phases          []*syncPhaseR `json:"phases"`
	// Failed says why the bench failed: each sync that failed, or left a copy that differs from the session. The
	// rounds go on without that run's figures, and the bench exits 1.
	Failed []string `json:"failed,omitempty"`
}

// syncPhaseR is one phase's rounds, by tool, in the order the rounds ran.
type syncPhaseR struct {
	Phase   string               `json:"phase"`
	Seconds map[string][]float64 `json:"seconds"`
	Sent    map[string][]int64   `json:"bytes_sent"`     // client to server, on the wire
	Recv    map[string][]int64   `json:"bytes_received"` // server to client, on the wire
	Said    map[string][]string  `json:"said"`           // what the tool reported moving
	Round   map[string][]int     `json:"round"`          // the round of each run (a failed run is not counted)
}

func (r *syncResult) failure() error {
	if r == nil || len(r.Failed) == 0 {
		return nil
	}
	return fmt.Errorf("sync workload: %d failures: %s", len(r.Failed), strings.Join(r.Failed, "; "))
}

// syncRun is the state of one sync workload: the stores, sshd and the counting proxy.
type syncRun struct {
	b       *bench
	dir     string
	storeA  string
	session string // store A's session s1
	uuid    string // the transcript's conversation
	rnd     *rand.Rand
	sshd    *sshd
	proxy   *wireCounter
	blobs   []string // the blobs' paths, relative to the session
	// lastUUID is the transcript's last line's, lines its lines as made, appended the lines appended since.
	lastUUID        string
	lines, appended int
	// unconfined is --unconfined when this sessionfs wants it to sync through a remote's sftp-server.
	unconfined []string
}

// runSyncOnly is the bench with -sync-only: no store of c.sessions sessions, no mount; the sync workload alone.
func runSyncOnly(c config) error {
	b := &bench{c: c, Date: time.Now().UTC().Format(time.RFC3339), Machine: machine()}
	b.syncWorkload()
	b.reportSync(os.Stdout)
	for _, s := range b.Skipped {
		fmt.Printf("skipped: %s\n", s)
	}
	if err := b.writeJSON(c.jsonOut); err != nil {
		return err
	}
	return b.Sync.failure()
}

func (b *bench) syncWorkload() {
	for _, tool := range []string{"rsync", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.skip("sync: %s is not installed", tool)
			return
		}
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		b.skip("sync: OpenSSH's server is not installed (apt-get install openssh-server)")
		return
	}
	dir := filepath.Join(b.c.dir, "sync")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.skip("sync: %v", err)
		return
	}
	defer os.RemoveAll(dir)
	s := &syncRun{b: b, dir: dir, storeA: filepath.Join(dir, "a"), rnd: rand.New(rand.NewPCG(1, 2))}
	r, err := s.run()
	if r != nil {
		b.Sync = r
	}
	if err != nil {
		b.skip("sync: %v", err)
	}
}

func (s *syncRun) run() (*syncResult, error) {
	c := s.b.c.sync
	fmt.Fprintf(os.Stderr, "sync: making a session of %s (%d text files and blobs) and a %s transcript\n",
		human(c.workspace), c.textFiles, human(c.transcript))
	r, err := s.makeSession()
	if err != nil {
		return nil, err
	}
	if s.proxy, err = newWireCounter(); err != nil {
		return nil, err
	}
	defer s.proxy.close()
	if s.sshd, err = startSSHD(filepath.Join(s.dir, "ssh"), s.proxy); err != nil {
		return nil, err
	}
	defer s.sshd.stop()
	cfg := s.sshd.config
	if help, _ := exec.Command(s.b.c.sessionfs, "sync", "--help").CombinedOutput(); strings.Contains(string(help), "--unconfined") {
		s.unconfined = []string{"--unconfined"}
	}
	tools := []syncTool{
		// sessionfs on the other machine (this build): sync runs its sync-serve there.
		{key: "sessionfs", run: func(s *syncRun, dest string) (string, error) { return s.sessionfsPush(dest, s.b.c.sessionfs) }},
		// None there: OpenSSH's sftp-server serves the session (after a try of sessionfs there, as a user's is),
		// with --unconfined where this sessionfs asks for it.
		{key: "sessionfs, sftp-server", run: func(s *syncRun, dest string) (string, error) {
			return s.sessionfsPush(dest, "/nonexistent/sessionfs", s.unconfined...)
		}},
		{key: "rsync -a", run: func(s *syncRun, dest string) (string, error) { return s.rsync(dest, "ssh -F "+cfg) }},
		// sessionfs runs ssh with -C: rsync with the same ssh compression, for the bytes' sake.
		{key: "rsync -a, ssh -C", run: func(s *syncRun, dest string) (string, error) { return s.rsync(dest, "ssh -F "+cfg+" -C") }},
	}
	r.Rounds = max(c.runs, 1)
	for _, t := range tools {
		r.Tools = append(r.Tools, t.key)
	}
	for _, p := range syncPhases {
		r.Phases = append(r.Phases, &syncPhaseR{Phase: p, Seconds: map[string][]float64{}, Sent: map[string][]int64{},
			Recv: map[string][]int64{}, Said: map[string][]string{}, Round: map[string][]int{}})
	}
	var last []string // the last round's destinations
	for round := 0; round < r.Rounds; round++ {
		for _, d := range last {
			os.RemoveAll(d)
		}
		last = last[:0]
		dests := map[string]string{}
		for i, t := range tools {
			d := filepath.Join(s.dir, fmt.Sprintf("b%d-%d", i, round)) // a new store: sessionfs's state of a remote is by URL
			if err := os.MkdirAll(filepath.Join(d, "sessions"), 0o755); err != nil {
				return r, err
			}
			dests[t.key], last = d, append(last, d)
		}
		for pi, p := range r.Phases {
			if pi == 1 {
				if err := s.appendLine(); err != nil {
					return r, err
				}
			}
			for _, t := range rotated(tools, round) {
				fmt.Fprintf(os.Stderr, "sync: round %d, %s, %s", round+1, p.Phase, t.key)
				syscall.Sync() // the last run's writeback is not this one's to pay
				s.proxy.reset()
				var said string
				d, err := timed(func() (err error) { said, err = t.run(s, dests[t.key]); return err })
				sent, recv, perr := s.proxy.idle(10 * time.Second)
				if perr != nil {
					fmt.Fprintln(os.Stderr)
					return r, perr
				}
				fmt.Fprintf(os.Stderr, ": %v, sent %s, received %s\n", d.Round(time.Millisecond), wireBytes(sent), wireBytes(recv))
				fail := func(format string, args ...any) {
					msg := fmt.Sprintf("round %d, %s, %s: ", round+1, p.Phase, t.key) + fmt.Sprintf(format, args...)
					r.Failed = append(r.Failed, msg)
					fmt.Fprintf(os.Stderr, "sync: FAILED: %s\n", msg)
				}
				// A sync that failed, or left a copy unlike the session, fails the bench, and its run is not counted.
				if err != nil {
					fail("%v", err)
					continue
				}
				if err := sameSession(s.session, filepath.Join(dests[t.key], "sessions", "s1"), s.blobs, s.transcriptRel()); err != nil {
					fail("the copy differs: %v", err)
					continue
				}
				p.Seconds[t.key] = append(p.Seconds[t.key], d.Seconds())
				p.Sent[t.key] = append(p.Sent[t.key], sent)
				p.Recv[t.key] = append(p.Recv[t.key], recv)
				p.Said[t.key] = append(p.Said[t.key], said)
				p.Round[t.key] = append(p.Round[t.key], round)
			}
		}
	}
	return r, nil
}

// sessionfsPush is `sessionfs sync push s1 b:<dest>` from store A, with remoteBin the sessionfs it runs there,
// and what it said it pushed.
func (s *syncRun) sessionfsPush(dest, remoteBin string, flags ...string) (string, error) {
	cmd := exec.Command(s.b.c.sessionfs, append([]string{"sync", "push"}, append(flags, "s1", "b:"+dest)...)...)
	// SESSIONFS_SSH is split on spaces, no shell: the bench's folders have none (os.MkdirTemp's, or -dir's).
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+s.storeA, "SESSIONFS_SSH=ssh -F "+s.sshd.config,
		"SESSIONFS_REMOTE_SESSIONFS="+remoteBin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	said := regexp.MustCompile(`pushed [^)]*\)`).FindString(stdout.String())
	if err != nil {
		return said, fmt.Errorf("%v: %s%s", err, stdout.String(), stderr.String())
	}
	return said, nil
}

// rsync is `rsync -a` of the session's folder in store A to the same folder of dest, over ssh, and what its
// --stats said it sent and received.
func (s *syncRun) rsync(dest, ssh string) (string, error) {
	cmd := exec.Command("rsync", "-a", "--stats", "-e", ssh, s.session+"/", "b:"+filepath.Join(dest, "sessions", "s1")+"/")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s%s", err, stdout.String(), stderr.String())
	}
	stat := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `: ([\d,.]+[KMGT]?)`).FindStringSubmatch(stdout.String())
		if m == nil {
			return "?"
		}
		return m[1]
	}
	return fmt.Sprintf("sent %s B, received %s B (literal data %s B, matched %s B)", stat("Total bytes sent"),
		stat("Total bytes received"), stat("Literal data"), stat("Matched data")), nil
}

// makeSession makes store A with session s1: c.textFiles source-like text files (40% of the workspace's bytes),
// three blobs of random bytes (the rest), and a Claude transcript of JSON lines of about 2 KB.
func (s *syncRun) makeSession() (*syncResult, error) {
	c := s.b.c.sync
	cmd := exec.Command(s.b.c.sessionfs, "new", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+s.storeA)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sessionfs new: %v: %s", err, out)
	}
	s.session = filepath.Join(s.storeA, "sessions", "s1")
	ws := filepath.Join(s.session, "workspace")
	r := &syncResult{}
	text := c.workspace * 4 / 10
	// Sizes spread as source files' are: most a few KB, a few tens of KB, scaled to the text's share.
	weights := make([]float64, c.textFiles)
	var sum float64
	for i := range weights {
		weights[i] = s.rnd.ExpFloat64() + 0.05
		sum += weights[i]
	}
	exts := []string{".go", ".go", ".go", ".ts", ".py", ".md", ".json"}
	for i, w := range weights {
		rel := filepath.Join("src", fmt.Sprintf("pkg%02d", i/50), fmt.Sprintf("file%04d%s", i, exts[i%len(exts)]))
		if err := writeSyncFile(filepath.Join(ws, rel), s.sourceText(int(float64(text)*w/sum))); err != nil {
			return nil, err
		}
		r.Files++
		r.WorkspaceBytes += int64(float64(text) * w / sum)
	}
	blobs := c.workspace - text
	for _, bl := range []struct {
		rel   string
		share int64
	}{{"assets/video.mp4", 3}, {"vendor/deps.tar.gz", 2}, {"assets/screenshot.png", 1}} {
		b := make([]byte, blobs*bl.share/6)
		for i := 0; i+8 <= len(b); i += 8 {
			v := s.rnd.Uint64()
			for k := range 8 {
				b[i+k] = byte(v >> (8 * k))
			}
		}
		if err := writeSyncFile(filepath.Join(ws, bl.rel), b); err != nil {
			return nil, err
		}
		s.blobs = append(s.blobs, filepath.Join("workspace", bl.rel))
		r.Files++
		r.WorkspaceBytes += int64(len(b))
		r.BlobBytes += int64(len(b))
	}
	s.uuid = s.uuidv4()
	var t bytes.Buffer
	parent := ""
	for int64(t.Len()) < c.transcript {
		line, id, err := s.transcriptLine(parent, r.TranscriptLines)
		if err != nil {
			return nil, err
		}
		t.Write(line)
		parent = id
		r.TranscriptLines++
	}
	r.TranscriptBytes = int64(t.Len())
	s.lastUUID, s.lines = parent, r.TranscriptLines
	if err := writeSyncFile(filepath.Join(s.session, s.transcriptRel()), t.Bytes()); err != nil {
		return nil, err
	}
	return r, nil
}

func writeSyncFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func (s *syncRun) transcriptRel() string {
	return filepath.Join(".claude", "projects", "-session-workspace", s.uuid+".jsonl")
}

var syncWords = strings.Fields(`the a of to in is it for on with as this that err nil return func if else for range
	var const type struct interface map string int bool byte error ctx context config value result request
	response handler server client session store path file folder name size time count index list items
	open close read write sync push pull remote local manifest journal append transcript workspace agent
	build test check parse format print log debug info warn fail retry timeout cancel done wait lock unlock`)

// sourceText is about n bytes of source-like text: indented lines of words and punctuation from a small
// vocabulary, compressible about as source code is.
func (s *syncRun) sourceText(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 128)
	punct := []string{" ", " ", " ", ".", "(", ") ", ", ", " := ", " = ", " {", "}", "[]", "\"", " // "}
	for b.Len() < n {
		b.WriteString(strings.Repeat("\t", s.rnd.IntN(4)))
		for w := 2 + s.rnd.IntN(9); w > 0; w-- {
			b.WriteString(syncWords[s.rnd.IntN(len(syncWords))])
			if s.rnd.IntN(3) == 0 {
				b.WriteString(fmt.Sprint(s.rnd.IntN(1000)))
			}
			b.WriteString(punct[s.rnd.IntN(len(punct))])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

func (s *syncRun) uuidv4() string {
	a, c := s.rnd.Uint64(), s.rnd.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, 0x8000|(c>>48)&0x3fff, c&0xffffffffffff)
}

// transcriptLine is the i-th line of a Claude-like transcript (about 2 KB), with its uuid.
func (s *syncRun) transcriptLine(parent string, i int) ([]byte, string, error) {
	id := s.uuidv4()
	role := []string{"user", "assistant"}[i%2]
	var text strings.Builder
	for text.Len() < 1700 {
		text.WriteString(syncWords[s.rnd.IntN(len(syncWords))])
		text.WriteByte(" \n"[s.rnd.IntN(12)/11])
	}
	var p any
	if parent != "" {
		p = parent
	}
	line, err := json.Marshal(map[string]any{
		"type": role, "uuid": id, "parentUuid": p, "sessionId": s.uuid, "cwd": "/session/workspace",
		"timestamp": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Second).Format(time.RFC3339Nano),
		"message":   map[string]any{"role": role, "content": []map[string]string{{"type": "text", "text": text.String()}}},
	})
	return append(line, '\n'), id, err
}

// appendLine appends one line to the session's transcript, as an agent does.
func (s *syncRun) appendLine() error {
	line, id, err := s.transcriptLine(s.lastUUID, s.lines+s.appended)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.session, s.transcriptRel()), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	s.lastUUID = id
	s.appended++
	return f.Close()
}

// sameSession checks the copy of the session at b against a: the same files, of the same sizes, in the workspace
// and the transcripts' folder; the transcript, the blobs and every 20th other file byte for byte.
func sameSession(a, b string, blobs []string, transcript string) error {
	full := map[string]bool{transcript: true}
	for _, bl := range blobs {
		full[bl] = true
	}
	for _, top := range []string{"workspace", filepath.Join(".claude", "projects")} {
		files := map[string]int64{}
		err := filepath.WalkDir(filepath.Join(a, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(a, p)
			files[rel] = fi.Size()
			return nil
		})
		if err != nil {
			return err
		}
		n := 0
		err = filepath.WalkDir(filepath.Join(b, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(b, p)
			size, ok := files[rel]
			if !ok {
				return fmt.Errorf("%s is there, not here", rel)
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() || fi.Size() != size {
				return fmt.Errorf("%s: %d bytes there, %d here", rel, fi.Size(), size)
			}
			if n++; full[rel] || n%20 == 0 {
				return sameBytes(filepath.Join(a, rel), p)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n != len(files) {
			return fmt.Errorf("%s: %d files there, %d here", top, n, len(files))
		}
	}
	return nil
}

func sameBytes(a, b string) error {
	x, err := os.ReadFile(a)
	if err != nil {
		return err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return err
	}
	if !bytes.Equal(x, y) {
		return fmt.Errorf("%s differs", b)
	}
	return nil
}

// sshd is an OpenSSH server of the bench's own on 127.0.0.1, reached through a counting proxy: config is a client
// config naming it "b".
type sshd struct {
	config string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

// startSSHD starts sshd with a host key, a user key and a client config of its own in dir, its clients reaching
// it through proxy.
func startSSHD(dir string, proxy *wireCounter) (*sshd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user.pub"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	// sshd's privilege separation needs its folder; a machine that never ran sshd lacks it.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
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
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	hostPub, err := os.ReadFile(filepath.Join(dir, "host.pub"))
	if err != nil {
		return nil, err
	}
	proxy.target(fmt.Sprintf("127.0.0.1:%d", port))
	known := fmt.Sprintf("[127.0.0.1]:%d %s\n", proxy.port(), strings.Join(strings.Fields(string(hostPub))[:2], " "))
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known), 0o600); err != nil {
		return nil, err
	}
	me, err := user.Current()
	if err != nil {
		return nil, err
	}
	// The client reaches sshd through the proxy; -F keeps /etc/ssh/ssh_config out, so compression is what the
	// command line says (sessionfs adds -C).
	client := fmt.Sprintf(`Host b
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %[3]s/user
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %[3]s/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  ControlMaster no
  ControlPath none
  LogLevel ERROR
`, proxy.port(), me.Username, dir)
	s := &sshd{config: filepath.Join(dir, "config"), exited: make(chan struct{})}
	if err := os.WriteFile(s.config, []byte(client), 0o600); err != nil {
		return nil, err
	}
	if s.log, err = os.Create(filepath.Join(dir, "sshd.log")); err != nil {
		return nil, err
	}
	s.cmd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // not left behind if the bench is killed
	if err := s.cmd.Start(); err != nil {
		s.log.Close()
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command("ssh", "-F", s.config, "b", "true").CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			return nil, fmt.Errorf("sshd did not answer: %v %s\nsshd's log:\n%s", err, out, b)
		}
	}
	return s, nil
}

// stop ends the sshd this bench started (only it).
func (s *sshd) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
}

// wireCounter is a TCP proxy on 127.0.0.1 to sshd that counts the bytes each way (the ssh stream, as on a wire).
type wireCounter struct {
	ln         net.Listener
	to         string
	sent, recv atomic.Int64 // client to server, server to client, since the last reset
	mu         sync.Mutex
	open       int
	closed     bool
}

func newWireCounter() (*wireCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &wireCounter{ln: ln}
	go w.serve()
	return w, nil
}

func (w *wireCounter) port() int { return w.ln.Addr().(*net.TCPAddr).Port }

// target names where the proxy connects (sshd's address), for the connections it accepts from now on.
func (w *wireCounter) target(addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.to = addr
}

func (w *wireCounter) serve() {
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		w.mu.Lock()
		w.open++
		w.mu.Unlock()
		go w.relay(c.(*net.TCPConn))
	}
}

// relay copies both ways between the client c and sshd (spliced in the kernel: TCP to TCP), and counts each way
// when it ends.
func (w *wireCounter) relay(c *net.TCPConn) {
	defer func() {
		w.mu.Lock()
		w.open--
		w.mu.Unlock()
	}()
	defer c.Close()
	w.mu.Lock()
	to := w.to
	w.mu.Unlock()
	sc, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	srv := sc.(*net.TCPConn)
	defer srv.Close()
	done := make(chan int64)
	go func() {
		n, _ := io.Copy(c, srv)
		_ = c.CloseWrite()
		done <- n
	}()
	n, _ := io.Copy(srv, c)
	_ = srv.CloseWrite()
	w.sent.Add(n)
	w.recv.Add(<-done)
}

func (w *wireCounter) reset() { w.sent.Store(0); w.recv.Store(0) }

// idle waits until no connection is open, and gives the bytes counted since the last reset.
func (w *wireCounter) idle(within time.Duration) (sent, recv int64, err error) {
	for deadline := time.Now().Add(within); ; time.Sleep(2 * time.Millisecond) {
		w.mu.Lock()
		open := w.open
		w.mu.Unlock()
		if open == 0 {
			return w.sent.Load(), w.recv.Load(), nil
		}
		if time.Now().After(deadline) {
			return 0, 0, errors.New("a connection through the counting proxy stayed open")
		}
	}
}

func (w *wireCounter) close() { w.ln.Close() }

// wireBytes prints a byte count for the report: KiB below a MiB.
func wireBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// spreadSecs prints runs as seconds: their median (min-max).
func spreadSecs(s []float64) string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f)", medianFloat(s), slices.Min(s), slices.Max(s))
}

func spreadBytes(s []int64) string {
	if len(s) == 0 {
		return "-"
	}
	f := make([]float64, len(s))
	for i, x := range s {
		f[i] = float64(x)
	}
	m, lo, hi := wireBytes(int64(medianFloat(f))), wireBytes(slices.Min(s)), wireBytes(slices.Max(s))
	if lo == hi {
		return m // the same to the figure printed in every round
	}
	return fmt.Sprintf("%s (%s-%s)", m, lo, hi)
}

func spreadRatio(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	m, lo, hi := fmt.Sprintf("%.2f", medianFloat(rs)), fmt.Sprintf("%.2f", slices.Min(rs)), fmt.Sprintf("%.2f", slices.Max(rs))
	if lo == hi {
		return m + "x"
	}
	return fmt.Sprintf("%sx (%s-%s)", m, lo, hi)
}

// ratios are a's figures over b's, of each round both ran.
func (p *syncPhaseR) ratios(a, b string, figs map[string][]float64) []float64 {
	var out []float64
	for i, ra := range p.Round[a] {
		if j := slices.Index(p.Round[b], ra); j >= 0 && figs[b][j] > 0 {
			out = append(out, figs[a][i]/figs[b][j])
		}
	}
	return out
}

func totals(p *syncPhaseR, tool string) []float64 {
	var out []float64
	for i := range min(len(p.Sent[tool]), len(p.Recv[tool])) {
		out = append(out, float64(p.Sent[tool][i]+p.Recv[tool][i]))
	}
	return out
}

// reportSync prints the sync workload: each phase's time and bytes on the wire by tool, median (min-max) of the
// rounds, and sessionfs's ratio to each rsync taken within each round (the tools of a round run one after the
// other, so the ratio cancels the drift between rounds).
func (b *bench) reportSync(w io.Writer) {
	r := b.Sync
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nsync of a session over ssh to a store on 127.0.0.1 (sessionfs sync push s1 b:STORE, against rsync -a of "+
		"the session's folder): %d files, workspace %.0f MiB (%.0f MiB of it random blobs), transcript %.1f MiB (%d lines); "+
		"%d rounds, tools interleaved, each round into empty stores; median (min-max); bytes on the wire: the ssh "+
		"stream both ways, counted by a TCP proxy between ssh and sshd; ratios taken within each round, then their "+
		"median (min-max); bytes: sent and received together; rsync-C: rsync -a, ssh -C\n\n",
		r.Files, float64(r.WorkspaceBytes)/(1<<20), float64(r.BlobBytes)/(1<<20), float64(r.TranscriptBytes)/(1<<20),
		r.TranscriptLines, r.Rounds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	bases := []string{"rsync -a", "rsync -a, ssh -C"}
	head := []string{"phase", "tool", "seconds", "sent (to sshd)", "received", "/rsync time", "/rsync bytes", "/rsync-C time", "/rsync-C bytes"}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, p := range r.Phases {
		for _, t := range r.Tools {
			if len(p.Seconds[t]) == 0 {
				continue
			}
			tool := t
			if n := len(p.Seconds[t]); n < r.Rounds {
				tool = fmt.Sprintf("%s (%d of %d runs)", t, n, r.Rounds)
			}
			row := []string{p.Phase, tool, spreadSecs(p.Seconds[t]), spreadBytes(p.Sent[t]), spreadBytes(p.Recv[t])}
			for _, base := range bases {
				if t == base {
					row = append(row, "-", "-")
					continue
				}
				row = append(row, spreadRatio(p.ratios(t, base, p.Seconds)),
					spreadRatio(p.ratios(t, base, map[string][]float64{t: totals(p, t), base: totals(p, base)})))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nwhat each tool reported moving (the first round's):\n")
	for _, p := range r.Phases {
		for _, t := range r.Tools {
			if len(p.Said[t]) > 0 {
				fmt.Fprintf(w, "  %-18s %-23s %s\n", p.Phase, t, p.Said[t][0])
			}
		}
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "FAILED: %s\n", strings.TrimSpace(f))
	}
}

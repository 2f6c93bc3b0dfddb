package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"github.com/sessionfs/sessionfs/layout"
)

// SSH is a session's copy in another machine's store, reached through the user's own ssh client (so its config,
// agent, known hosts and jump hosts all apply) running the sftp subsystem there: nothing but the store folder is
// needed on the other side. The ssh command is $SESSIONFS_SSH when set (split on spaces, no shell), else "ssh".
type SSH struct {
	url  string
	root string // the session's folder there: <store>/sessions/<id>
	cmd  *exec.Cmd
	c    *sftp.Client
	errs *tailBuffer // ssh's stderr, for messages
	// Confined says the other side is sessionfs serving beneath the session's folder, not OpenSSH's sftp-server.
	Confined bool
	// folders are the session's folders there found to be folders, when Confined: the server resolves every name
	// beneath the session without following a link, so a check need not be made again. Unconfined, each put
	// checks again (the check is all there is).
	folders sync.Map
	// Progress is told of the bytes sent and received; it may be nil.
	Progress func(n int64)
}

// sshTarget is where an ssh URL points.
type sshTarget struct {
	user, host, port, store string
}

// parseSSH reads ssh://[user@]host[:port][/path] and [user@]host:[path]; an empty path is the default store of
// the remote user (~/.local/share/sessionfs); ssh://host/~/x is x in the remote user's home.
func parseSSH(url string) (sshTarget, error) {
	var t sshTarget
	hostPart, storePath := "", ""
	if rest, ok := strings.CutPrefix(url, "ssh://"); ok {
		hostPart, storePath, _ = strings.Cut(rest, "/")
		if storePath != "" {
			storePath = "/" + storePath
		}
		storePath = strings.TrimPrefix(storePath, "/~/")
		if h, p, ok := strings.Cut(hostPart, ":"); ok && !strings.Contains(hostPart, "]") {
			hostPart, t.port = h, p
		}
	} else {
		var ok bool
		if hostPart, storePath, ok = strings.Cut(url, ":"); !ok {
			return t, fmt.Errorf("remote %q: want ssh://[user@]host[:port]/path, host:path or s3://bucket/prefix", url)
		}
	}
	if u, h, ok := strings.Cut(hostPart, "@"); ok {
		t.user, hostPart = u, h
	}
	t.host = hostPart
	if t.host == "" || strings.HasPrefix(t.host, "-") || strings.HasPrefix(t.user, "-") || strings.ContainsAny(t.host+t.user+t.port, " \t\n/") {
		return t, fmt.Errorf("remote %q: not a host ssh can be given", url)
	}
	for _, c := range t.port {
		if c < '0' || c > '9' {
			return t, fmt.Errorf("remote %q: port %q is not a number", url, t.port)
		}
	}
	if storePath == "" {
		storePath = ".local/share/sessionfs"
	}
	t.store = path.Clean(storePath)
	return t, nil
}

// OpenSSH connects to url and opens session id's folder in the store there. The other side is sessionfs itself
// when it is installed there ($SESSIONFS_REMOTE_SESSIONFS, else "sessionfs" on the login's PATH): it serves the
// session beneath its folder's descriptor (Serve), making the session if the store has none. Else it is OpenSSH's
// sftp-server, which follows links: the client checks each folder on the way (a link is refused), but an agent
// there racing the check could still win, so Confined is false and the CLI says so.
func OpenSSH(ctx context.Context, url, id string) (*SSH, error) {
	if err := layout.ValidateID(id); err != nil {
		return nil, err
	}
	t, err := parseSSH(url)
	if err != nil {
		return nil, err
	}
	argv := strings.Fields(os.Getenv("SESSIONFS_SSH"))
	if len(argv) == 0 {
		argv = []string{"ssh"}
	}
	// -C: compressed; "--" so a host is never taken for an option.
	argv = append(argv, "-C", "-o", "ServerAliveInterval=15")
	if t.port != "" {
		argv = append(argv, "-p", t.port)
	}
	if t.user != "" {
		argv = append(argv, "-l", t.user)
	}
	bin := os.Getenv("SESSIONFS_REMOTE_SESSIONFS")
	if bin == "" {
		bin = "sessionfs"
	}
	serve := shellQuote(bin) + " --store " + shellQuote(t.store) + " sync-serve " + shellQuote(id)
	s, err := dial(ctx, url, append(slices.Clone(argv), "--", t.host, serve))
	if err == nil {
		s.root, s.Confined = "/", true
		return s, nil
	}
	if !errors.Is(err, errNotThere) {
		return nil, err
	}
	if s, err = dial(ctx, url, append(argv, "-s", "--", t.host, "sftp")); err != nil {
		return nil, err
	}
	s.root = path.Join(t.store, "sessions", id)
	// The store must be there already: a typo'd path is an error, not a new store.
	if st, err := s.c.Stat(t.store); err != nil || !st.IsDir() {
		s.Close()
		return nil, fmt.Errorf("remote %s: no store folder %s there (make it, or run sessionfs there once)", url, t.store)
	}
	return s, nil
}

// errNotThere says the command run on the other machine does not exist there (exit 126 or 127).
var errNotThere = errors.New("not installed there")

// dial runs argv (ssh and what it runs there) and speaks sftp over its stdin and stdout.
func dial(ctx context.Context, url string, argv []string) (*SSH, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	errs := &tailBuffer{max: 4096}
	cmd.Stderr = errs
	wr, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	rd, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("remote %s: start %s: %w", url, argv[0], err)
	}
	s := &SSH{url: url, cmd: cmd, errs: errs}
	type result struct {
		c   *sftp.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := sftp.NewClientPipe(rd, wr, sftp.UseConcurrentWrites(true))
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			wr.Close()
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
			if code := cmd.ProcessState.ExitCode(); code == 126 || code == 127 {
				return nil, errNotThere
			}
			if e := strings.TrimSpace(errs.String()); e != "" {
				return nil, fmt.Errorf("remote %s: %s", url, e) // what ssh or the other side said is the reason
			}
			return nil, fmt.Errorf("remote %s: %w", url, r.err)
		}
		s.c = r.c
		return s, nil
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

// shellQuote quotes s for the remote's shell, which ssh hands the command to.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *SSH) String() string { return s.url }

// SetProgress has fn told of each byte sent and received.
func (s *SSH) SetProgress(fn func(int64)) { s.Progress = fn }

func (s *SSH) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	s.cmd.Wait()
}

// Close ends the sftp session and the ssh client.
func (s *SSH) Close() error {
	if s.c != nil {
		s.c.Close()
	}
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	return nil
}

// Commit has nothing to do: each put and removal was made visible by itself.
func (s *SSH) Commit(context.Context) error { return nil }

// maxListed bounds what a listing takes in: a remote cannot make the sync hold more than this many names.
const maxListed = 1_000_000

// tmpPrefix names the sync's temporary files there: never listed, and a killed put's leftover is removed by the
// next listing.
const tmpPrefix = ".sessionfs-sync-"

// List walks the session's folder there without following a link (sftp's READDIR gives each entry's own
// attributes); a name the server gives that is not one part (a "/" or "..") is refused.
func (s *SSH) List(ctx context.Context) (map[string]File, error) {
	out := map[string]File{}
	if _, err := s.c.Lstat(s.root); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	n := 0
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if depth > 256 {
			return fmt.Errorf("remote %s: folders nested more than 256 deep at %s", s.url, rel)
		}
		ents, err := s.c.ReadDirContext(ctx, path.Join(s.root, rel))
		if err != nil {
			return fmt.Errorf("remote %s: list %s: %w", s.url, rel, err)
		}
		for _, e := range ents {
			if n++; n > maxListed {
				return fmt.Errorf("remote %s: more than %d entries", s.url, maxListed)
			}
			name := e.Name()
			child := path.Join(rel, name)
			if strings.Contains(name, "/") || !Valid(child) {
				return fmt.Errorf("remote %s: the server named an entry %q", s.url, name)
			}
			if strings.HasPrefix(name, tmpPrefix) {
				// Left by a put that was killed: never a file of the session. (A sync of this session with this
				// store from another machine at this very moment would find its put gone, and say so.)
				if e.Mode().IsRegular() {
					s.c.Remove(path.Join(s.root, child))
				}
				continue
			}
			switch {
			case e.Mode().IsDir():
				if err := walk(child, depth+1); err != nil {
					return err
				}
			case e.Mode().IsRegular():
				out[child] = fileOf(e)
			}
		}
		return nil
	}
	return out, walk("", 0)
}

func fileOf(fi fs.FileInfo) File {
	return File{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode().Perm())}
}

// sameStat reports whether fi is the regular file f (sftp's times are whole seconds).
func sameStat(fi fs.FileInfo, f File) bool {
	return fi.Mode().IsRegular() && fi.Size() == f.Size && fi.ModTime().Unix() == f.time().Unix()
}

// checkParents makes sure every folder on the way to rel is a folder, not a link (a link the other side's session
// made is never written through), making missing ones when mk.
func (s *SSH) checkParents(rel string, mk bool) error {
	dir := s.root
	if mk {
		if _, ok := s.folders.Load(dir); !ok {
			if err := s.c.MkdirAll(s.root); err != nil {
				return fmt.Errorf("remote %s: make %s: %w", s.url, s.root, err)
			}
		}
	}
	for _, p := range strings.Split(path.Dir(rel), "/") {
		if p == "." {
			break
		}
		dir = path.Join(dir, p)
		if _, ok := s.folders.Load(dir); ok {
			continue
		}
		fi, err := s.c.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) && mk {
			if err := s.c.Mkdir(dir); err != nil {
				// Another put of this sync may have made it meanwhile: what is there must be a folder.
				if fi, err2 := s.c.Lstat(dir); err2 != nil || !fi.IsDir() {
					return fmt.Errorf("remote %s: make %s: %w", s.url, dir, err)
				}
			}
			s.remember(dir)
			continue
		}
		if err != nil {
			return fmt.Errorf("remote %s: %s: %w", s.url, dir, err)
		}
		if fi.IsDir() {
			s.remember(dir)
		} else {
			return &refusal{rel, fmt.Sprintf("%s is not a folder there (a link or a file): nothing is written through it", strings.TrimPrefix(strings.TrimPrefix(dir, s.root), "/"))}
		}
	}
	return nil
}

// remember records dir as a folder, when the server is confined.
func (s *SSH) remember(dir string) {
	if s.Confined {
		s.folders.Store(dir, true)
	}
}

// expect checks that rel is was now (nil: absent).
func (s *SSH) expect(rel string, was *File) error {
	fi, err := s.c.Lstat(path.Join(s.root, rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if was == nil {
			return nil
		}
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	case err != nil:
		return fmt.Errorf("remote %s: %s: %w", s.url, rel, err)
	case was == nil || !sameStat(fi, *was):
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	return nil
}

// Get reads rel, refusing one that is no longer what was listed (a link put in its place, a file grown): never
// more than f.Size bytes are read.
func (s *SSH) Get(ctx context.Context, rel string, f File, w io.Writer) error {
	if !Valid(rel) {
		return fmt.Errorf("remote %s: bad name %q", s.url, rel)
	}
	if err := s.checkParents(rel, false); err != nil {
		return err
	}
	if err := s.expect(rel, &f); err != nil {
		return err
	}
	h, err := s.c.OpenFile(path.Join(s.root, rel), os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("remote %s: %s: %w", s.url, rel, err)
	}
	defer h.Close()
	if fi, err := h.Stat(); err != nil || !sameStat(fi, f) {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	n, err := io.Copy(w, &counting{r: io.LimitReader(h, f.Size), fn: s.Progress})
	if err != nil {
		return fmt.Errorf("remote %s: read %s: %w", s.url, rel, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	return nil
}

// Put writes a temporary file beside rel (created exclusively: never through a link), gives it f's mode and
// mtime, and renames it over rel if rel is still was.
func (s *SSH) Put(ctx context.Context, rel string, r io.Reader, f File, was *File) (File, error) {
	if !Valid(rel) {
		return File{}, fmt.Errorf("remote %s: bad name %q", s.url, rel)
	}
	if err := s.checkParents(rel, true); err != nil {
		return File{}, err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(s.root, path.Dir(rel), tmpPrefix+hex.EncodeToString(rnd[:]))
	h, err := s.c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return File{}, fmt.Errorf("remote %s: put %s: %w", s.url, rel, err)
	}
	done := false
	defer func() {
		if !done {
			s.c.Remove(tmp)
		}
	}()
	n, err := h.ReadFrom(&counting{r: r, fn: s.Progress})
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != f.Size {
		err = fmt.Errorf("%d bytes, not %d", n, f.Size)
	}
	if err == nil {
		err = s.c.Chmod(tmp, fs.FileMode(f.Mode&0o777))
	}
	if err == nil {
		err = s.c.Chtimes(tmp, time.Now(), f.time())
	}
	if err != nil {
		return File{}, fmt.Errorf("remote %s: put %s: %w", s.url, rel, err)
	}
	if err := s.expect(rel, was); err != nil {
		return File{}, err
	}
	if err := s.c.PosixRename(tmp, path.Join(s.root, rel)); err != nil {
		return File{}, fmt.Errorf("remote %s: put %s: %w", s.url, rel, err)
	}
	done = true
	// As the next listing will give it (sftp's times are whole seconds): no round trip to ask.
	return File{Size: f.Size, Mtime: f.time().Unix() * 1e9, Mode: f.Mode & 0o777}, nil
}

// maxAtomicAppend is the most an append sends in one sftp write, which the server makes one write(2) of an
// O_APPEND file: it lands whole or not at all, and never between the lines of an agent appending there too.
const maxAtomicAppend = 30 << 10

// Append appends a short tail in one write; a longer one is Put whole (ok false).
func (s *SSH) Append(ctx context.Context, rel string, tail []byte, was File) (File, bool, error) {
	if len(tail) > maxAtomicAppend || !Valid(rel) {
		return File{}, false, nil
	}
	if err := s.checkParents(rel, false); err != nil {
		return File{}, false, err
	}
	if err := s.expect(rel, &was); err != nil {
		return File{}, false, err
	}
	h, err := s.c.OpenFile(path.Join(s.root, rel), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return File{}, false, fmt.Errorf("remote %s: append %s: %w", s.url, rel, err)
	}
	defer h.Close()
	if fi, err := h.Stat(); err != nil || !sameStat(fi, was) {
		return File{}, false, fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	if _, err := h.Write(tail); err != nil {
		return File{}, false, fmt.Errorf("remote %s: append %s: %w", s.url, rel, err)
	}
	if s.Progress != nil {
		s.Progress(int64(len(tail)))
	}
	fi, err := h.Stat()
	if err != nil {
		return File{}, false, fmt.Errorf("remote %s: append %s: %w", s.url, rel, err)
	}
	return fileOf(fi), true, nil
}

// Remove removes rel if it is still was.
func (s *SSH) Remove(ctx context.Context, rel string, was File) error {
	if !Valid(rel) {
		return fmt.Errorf("remote %s: bad name %q", s.url, rel)
	}
	if err := s.checkParents(rel, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	fi, err := s.c.Lstat(path.Join(s.root, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !sameStat(fi, was) {
		return fmt.Errorf("%s: %w", rel, ErrChanged)
	}
	if err := s.c.Remove(path.Join(s.root, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remote %s: remove %s: %w", s.url, rel, err)
	}
	return nil
}

// counting reports what passes through it.
type counting struct {
	r  io.Reader
	fn func(int64)
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.fn != nil && n > 0 {
		c.fn(int64(n))
	}
	return n, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// Package docker runs a session's commands in a container through the Docker Engine API, with the session's folder
// bound at /session: CLAUDE_CONFIG_DIR=/session/.claude, working dir /session/workspace.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/bind"
	"github.com/sessionfs/sessionfs/layout"
)

// Labels every container of ours carries, so `docker ps --filter label=sessionfs.session=ID` finds them.
const (
	LabelSession = "sessionfs.session"
	LabelManaged = "sessionfs.managed"
)

// Options shape the containers of a run.
type Options struct {
	Image   string
	User    string // --user, as docker run takes it
	Network string // --network; empty: the engine's default
	// Strict binds app/ and mcps/ read-only (seed 002's strict mode).
	Strict bool
	// Home sets HOME=/session/home, whose .claude and .claude.json lead to the session's, for tools that ignore
	// CLAUDE_CONFIG_DIR.
	Home bool
	// Volumes are extra binds, as docker run -v takes them (SRC:DST[:ro]).
	Volumes []string
	// Credentials is the user's Claude login a session shares (session.CredentialsFor), bound read-only at its own
	// path, where the session's .claude/.credentials.json link leads; "" binds none. It is the user's file, never a
	// path of a session's.
	Credentials string
	// Mount is the sessionfs mount the session comes through (nil: the store's folder is bound): the container's
	// user must be one it lets in.
	Mount *Mounted
	// Keep leaves the container after it exits.
	Keep bool
	// StopTimeout is how long a cancelled run's container gets between SIGTERM and SIGKILL.
	StopTimeout time.Duration
}

// Backend runs commands in containers.
type Backend struct {
	cli  *client.Client
	opts Options
}

var _ backends.Backend = (*Backend)(nil)

// New connects to the engine named by the environment (DOCKER_HOST, DOCKER_API_VERSION, DOCKER_CERT_PATH, ...)
// and negotiates the API version.
func New(opts Options) (*Backend, error) {
	if opts.Image == "" {
		return nil, errors.New("docker: --image is required")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 10 * time.Second
	}
	return &Backend{cli: cli, opts: opts}, nil
}

// Name is "docker".
func (b *Backend) Name() string { return "docker" }

// Close releases the client.
func (b *Backend) Close() error { return b.cli.Close() }

// Run runs spec in a new container and returns its exit code. Cancelling ctx stops the container.
func (b *Backend) Run(ctx context.Context, spec backends.Spec) (int, error) {
	if len(spec.Argv) == 0 {
		return -1, errors.New("no command to run")
	}
	// Ctrl-C (ctx) stops the container once it runs; it must not cut an API call short, or a container created
	// by a call the engine finished could be left behind.
	cancelled := ctx
	ctx = context.WithoutCancel(ctx)
	if err := b.ping(ctx); err != nil {
		return -1, err
	}
	imageUser, err := b.ensureImage(ctx)
	if err != nil {
		return -1, err
	}
	var st stage
	defer st.release()
	cfg, host, err := b.config(spec, &st)
	if err != nil {
		return -1, err
	}
	id, err := b.create(ctx, cfg, host)
	if err != nil {
		return -1, err
	}
	// Who runs it is settled on the created container, whose image's accounts say who a name is.
	user, err := b.containerUser(ctx, id, imageUser, spec)
	if err == nil && user != cfg.User {
		b.remove(ctx, id)
		cfg.User = user
		id, err = b.create(ctx, cfg, host)
	}
	if !b.opts.Keep && id != "" {
		defer b.remove(ctx, id)
	}
	if err != nil {
		return -1, err
	}
	if cancelled.Err() != nil {
		return -1, cancelled.Err()
	}
	if err := b.seesSession(ctx, id, spec); err != nil {
		return -1, err
	}
	return b.attachAndWait(ctx, cancelled, id, spec)
}

// seesSession checks, before the container starts, that the engine found the session where it was told to look.
// An engine in a mount namespace of its own (rootless Podman or Docker, started before the mount, on a host whose
// / does not propagate mounts) does not see the sessionfs mount: it binds the empty folder beneath the mountpoint
// instead (Podman makes the missing folders), and what the run writes outside the heavy folders would be hidden
// there. The session's session.json, always there through the mount, tells.
func (b *Backend) seesSession(ctx context.Context, id string, spec backends.Spec) error {
	if spec.Folder == nil {
		return nil
	}
	d, err := layout.OpenDir(spec.SessionDir)
	if err != nil {
		return err
	}
	mounted := !layout.SameFolder(d, spec.Folder)
	d.Close()
	if !mounted {
		return nil
	}
	if _, err := b.cli.ContainerStatPath(ctx, id, path.Join(layout.ContainerRoot, layout.MetaFile)); err != nil {
		return fmt.Errorf("the engine at %s does not see the sessionfs mount (%s): a rootless engine started before the "+
			"mount, on a host whose mounts do not propagate to it, binds the empty folder beneath the mountpoint instead. "+
			"Start the engine after sessionfs mount (rootless Podman: podman system migrate, then its service again), or "+
			"unmount to run on the store", b.cli.DaemonHost(), spec.SessionDir)
	}
	return nil
}

func (b *Backend) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.cli.Ping(pctx); err != nil {
		return fmt.Errorf("cannot reach the Docker engine at %s (start it: sudo systemctl start docker, or dockerd; or point DOCKER_HOST at one): %v",
			b.cli.DaemonHost(), oneLine(err))
	}
	return nil
}

// create creates a container, "" when the engine made none.
func (b *Backend) create(ctx context.Context, cfg *container.Config, host *container.HostConfig) (string, error) {
	created, err := b.cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		return "", fmt.Errorf("docker: create container: %w", err)
	}
	return created.ID, nil
}

// remove removes container id with its anonymous volumes (-v /path).
func (b *Backend) remove(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = b.cli.ContainerRemove(rctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
}

// ensureImage uses a local image, pulling it only when missing, and returns the user it runs as.
func (b *Backend) ensureImage(ctx context.Context) (string, error) {
	img, err := b.cli.ImageInspect(ctx, b.opts.Image)
	if err == nil {
		return imageUser(img), nil
	}
	if !client.IsErrNotFound(err) {
		return "", fmt.Errorf("docker: inspect image %q: %w", b.opts.Image, err)
	}
	rc, perr := b.cli.ImagePull(ctx, b.opts.Image, image.PullOptions{})
	if perr == nil {
		_, perr = io.Copy(io.Discard, rc)
		rc.Close()
		if perr == nil {
			if img, perr = b.cli.ImageInspect(ctx, b.opts.Image); perr == nil {
				return imageUser(img), nil
			}
		}
	}
	return "", fmt.Errorf("image %q is not on this machine and pulling it failed: %v", b.opts.Image, oneLine(perr))
}

func imageUser(img image.InspectResponse) string {
	if img.Config == nil {
		return ""
	}
	return img.Config.User
}

// config builds the container: the session at /session and nothing else of the store. Every bind of the
// session's folders is resolved by descriptor (see stage).
func (b *Backend) config(spec backends.Spec, st *stage) (*container.Config, *container.HostConfig, error) {
	cp := layout.ContainerPaths
	workdir := cp.Workspace
	if spec.Workdir != "" {
		host, err := layout.ToHost(spec.SessionDir, filepath.Join(layout.ContainerRoot, spec.Workdir))
		if err != nil {
			return nil, nil, fmt.Errorf("workdir %q: %w", spec.Workdir, err)
		}
		if workdir, err = layout.ToContainer(spec.SessionDir, host); err != nil {
			return nil, nil, err
		}
	}
	var home []string
	if b.opts.Home {
		if err := linkHome(spec); err != nil {
			return nil, nil, fmt.Errorf("prepare home/: %w", err)
		}
		home = []string{"HOME=" + filepath.Join(cp.Root, "home")}
	}
	env := spec.SessionEnv(nil, cp.Root, home...)
	sess, err := layout.OpenDir(spec.SessionDir)
	if err != nil {
		return nil, nil, err
	}
	defer sess.Close()
	root, err := st.source(sess, spec.SessionDir, ".")
	if err != nil {
		return nil, nil, err
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: root, Target: cp.Root}}
	binds, err := b.storeBinds(spec, sess, st)
	if err != nil {
		return nil, nil, err
	}
	mounts = append(mounts, binds...)
	if c := b.opts.Credentials; c != "" {
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: c, Target: c, ReadOnly: true})
	}
	cfg := &container.Config{
		Image:        b.opts.Image,
		Cmd:          spec.Argv,
		Env:          env,
		WorkingDir:   workdir,
		User:         b.opts.User,
		Tty:          spec.TTY,
		OpenStdin:    spec.Stdin != nil,
		StdinOnce:    spec.Stdin != nil,
		AttachStdin:  spec.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Labels:       map[string]string{LabelSession: spec.SessionID, LabelManaged: "true"},
	}
	host := &container.HostConfig{Mounts: mounts, Binds: b.opts.Volumes, NetworkMode: container.NetworkMode(b.opts.Network)}
	return cfg, host, nil
}

// storeBinds returns the binds laid over /session. When /session comes from the mount, the heavy folders are
// bound from the store (spec.Folder) over it: native speed, while /session and /session/.claude stay the mount's
// so every other cwd's transcript folder is still a view of the canonical one. When /session is the store folder
// itself, only --strict's read-only binds are added.
func (b *Backend) storeBinds(spec backends.Spec, sess *layout.Dir, st *stage) ([]mount.Mount, error) {
	cp := layout.ContainerPaths
	src, srcPath := sess, spec.SessionDir
	if spec.Folder != nil && !layout.SameFolder(sess, spec.Folder) {
		src, srcPath = spec.Folder, spec.Folder.Name()
	}
	strict := map[string]bool{layout.AppDir: b.opts.Strict, layout.MCPDir: b.opts.Strict}
	ro := backends.ReadOnlyMount(spec.SessionDir) // a read-only mount's folders stay read-only through the binds
	var out []mount.Mount
	for _, rel := range bind.RunDirs {
		if src == sess && !strict[rel] {
			continue // already native: /session is the store folder
		}
		source, err := st.source(src, srcPath, rel)
		if err != nil {
			return nil, err
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: source, Target: path.Join(cp.Root, rel), ReadOnly: strict[rel] || ro})
	}
	return out, nil
}

// linkHome makes home/.claude and home/.claude.json lead to the session's .claude and .claude/.claude.json.
// The links are relative, so they hold on the host, in the mount and in the container alike. They are made in
// the store beneath the session's folder, owned like it: a home/ the session made a symlink is refused, never
// followed.
func linkHome(spec backends.Spec) error {
	sess := spec.Folder
	if sess == nil {
		d, err := layout.OpenDir(spec.SessionDir)
		if err != nil {
			return err
		}
		defer d.Close()
		sess = d
	}
	uid, gid, err := sess.Owner()
	if err != nil {
		return err
	}
	if err := sess.MkdirAll("home", 0o755, uid, gid); err != nil {
		return err
	}
	for _, l := range []struct{ name, target string }{{".claude", "../.claude"}, {".claude.json", "../.claude/.claude.json"}} {
		rel := "home/" + l.name
		if cur, err := sess.Readlink(rel); err == nil && cur == l.target {
			continue
		}
		if err := sess.Symlink(l.target, rel, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// attachAndWait streams stdio, starts the container and returns its exit code. When cancelled is done it stops
// the container (SIGTERM, then SIGKILL after StopTimeout) and still reports the exit code.
func (b *Backend) attachAndWait(ctx, cancelled context.Context, id string, spec backends.Spec) (int, error) {
	// Wait is registered before start, so a command that exits at once is not missed.
	waitCh, errCh := b.cli.ContainerWait(ctx, id, container.WaitConditionNextExit)
	hr, err := b.cli.ContainerAttach(ctx, id, container.AttachOptions{
		Stream: true, Stdin: spec.Stdin != nil, Stdout: true, Stderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("docker: attach: %w", err)
	}
	defer hr.Close()
	restore := b.rawTerminal(spec)
	defer restore()
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		stdout, stderr := orDiscard(spec.Stdout), orDiscard(spec.Stderr)
		if spec.TTY {
			_, _ = io.Copy(stdout, hr.Reader)
		} else {
			_, _ = stdcopy.StdCopy(stdout, stderr, hr.Reader)
		}
	}()
	if spec.Stdin != nil {
		go func() {
			_, _ = io.Copy(hr.Conn, spec.Stdin)
			_ = hr.CloseWrite()
		}()
	}
	if err := b.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return startExit(err), fmt.Errorf("docker: start: %v", oneLine(err))
	}
	b.resize(ctx, id, spec)
	select {
	case <-cancelled.Done():
		b.stop(ctx, id, orDiscard(spec.Stderr))
	case <-waitCh:
	case err := <-errCh:
		return -1, fmt.Errorf("docker: wait: %w", err)
	}
	<-outDone // the exit code is read once all output is out
	ins, err := b.cli.ContainerInspect(ctx, id)
	if err != nil {
		return -1, fmt.Errorf("docker: inspect: %w", err)
	}
	if ins.State != nil && ins.State.Error != "" {
		return ins.State.ExitCode, fmt.Errorf("docker: %s", ins.State.Error)
	}
	if ins.State == nil {
		return -1, errors.New("docker: container state unknown")
	}
	return ins.State.ExitCode, nil
}

// stop stops a container whose run was interrupted: SIGTERM, then SIGKILL after StopTimeout, or at once when
// interrupted again. It says so on w: a stop can take that long.
func (b *Backend) stop(ctx context.Context, id string, w io.Writer) {
	fmt.Fprintf(w, "sessionfs: stopping the container (SIGTERM, then SIGKILL in %s; interrupt again to kill it now)\n", b.opts.StopTimeout)
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-again:
			fmt.Fprintln(w, "sessionfs: killing the container")
			_ = b.cli.ContainerKill(ctx, id, "KILL")
		case <-stopped:
		}
	}()
	timeout := int(b.opts.StopTimeout / time.Second)
	sctx, cancel := context.WithTimeout(ctx, b.opts.StopTimeout+10*time.Second)
	defer cancel()
	_ = b.cli.ContainerStop(sctx, id, container.StopOptions{Timeout: &timeout})
}

// rawTerminal puts a terminal stdin in raw mode for a TTY run, so keys reach the container as typed.
func (b *Backend) rawTerminal(spec backends.Spec) func() {
	f, ok := spec.Stdin.(*os.File)
	if !spec.TTY || !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	state, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return func() {}
	}
	return func() { _ = term.Restore(int(f.Fd()), state) }
}

func (b *Backend) resize(ctx context.Context, id string, spec backends.Spec) {
	f, ok := spec.Stdout.(*os.File)
	if !spec.TTY || !ok {
		return
	}
	if w, h, err := term.GetSize(int(f.Fd())); err == nil {
		_ = b.cli.ContainerResize(ctx, id, container.ResizeOptions{Width: uint(w), Height: uint(h)})
	}
}

// startExit is the exit code of a command the runtime could not start, as docker run reports it: 127 when it
// is not found, 126 when it cannot be executed, 125 otherwise (the failure is docker's).
func startExit(err error) int {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "executable file not found"), strings.Contains(msg, "no such file or directory"):
		return 127
	case strings.Contains(msg, "permission denied"), strings.Contains(msg, "exec format error"):
		return 126
	}
	return 125
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func oneLine(err error) string {
	if err == nil {
		return "unknown error"
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

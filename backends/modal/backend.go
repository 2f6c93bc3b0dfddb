package modal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	modalsdk "github.com/modal-labs/modal-client/go"

	"github.com/sessionfs/sessionfs/backends"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// Options shape a Modal run.
type Options struct {
	Image   string        // a registry image, e.g. python:3.13-slim; it needs /bin/sh
	Timeout time.Duration // the sandbox's lifetime; 0 is DefaultTimeout
	App     string        // the Modal App sandboxes run under (default "sessionfs")
}

// MaxTimeout is the longest a Modal sandbox may live.
const MaxTimeout = 24 * time.Hour

// DefaultTimeout is a sandbox's lifetime unless --timeout says otherwise: an agent's run can take hours, and the
// SDK's own default (5 minutes) would kill most of them; Modal's maximum, so that only --timeout or Ctrl-C ends one.
const DefaultTimeout = MaxTimeout

// Backend runs a session's command in a Modal Sandbox with the session's Volume at /session: push before, pull
// after. One run per session at a time.
type Backend struct {
	client *Client
	store  *layout.Store
	opts   Options
	// RunLabel names the run in conflict copies; it defaults to the start time.
	RunLabel string
	// Progress and Total follow the push before the run and the pull after it (see Syncer).
	Progress, Total func(n int64)
}

var _ backends.Backend = (*Backend)(nil)

// NewBackend runs through client for sessions of store.
func NewBackend(client *Client, store *layout.Store, opts Options) (*Backend, error) {
	if opts.Image == "" {
		return nil, errors.New("modal: --image is required")
	}
	if opts.App == "" {
		opts.App = "sessionfs"
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Timeout < time.Second || opts.Timeout > MaxTimeout || opts.Timeout%time.Second != 0 {
		return nil, fmt.Errorf("modal: --timeout %s: want whole seconds, from 1s to %s", opts.Timeout, MaxTimeout)
	}
	return &Backend{client: client, store: store, opts: opts}, nil
}

// Name is "modal".
func (b *Backend) Name() string { return "modal" }

// Run pushes the session, runs spec in a Sandbox (CLAUDE_CONFIG_DIR=/session/.claude, workdir
// /session/workspace), streams its output, and pulls the run's changes back. Cancelling ctx terminates the
// sandbox; its changes are still pulled.
func (b *Backend) Run(ctx context.Context, spec backends.Spec) (int, error) {
	unlock, err := b.lock(spec.SessionID)
	if err != nil {
		return -1, err
	}
	defer unlock()
	run := b.RunLabel
	if run == "" {
		run = time.Now().UTC().Format("20060102T150405Z")
	}
	// The store folder, not the mount: the sync reads and writes the store itself.
	sy, err := NewSyncer(ctx, b.client, b.store, spec.SessionID)
	if err != nil {
		return -1, err
	}
	sy.Label, sy.Progress, sy.Total = run, b.Progress, b.Total
	if _, err := sy.Push(ctx); err != nil {
		return -1, err
	}
	sdk := b.client.SDK
	app, err := sdk.Apps.FromName(ctx, b.opts.App, &modalsdk.AppFromNameParams{CreateIfMissing: true, Environment: b.client.Config.Environment})
	if err != nil {
		return -1, Explain(err, b.client.Config)
	}
	vol, err := sdk.Volumes.FromName(ctx, VolumeName(spec.SessionID), &modalsdk.VolumeFromNameParams{
		Environment: b.client.Config.Environment, CreateIfMissing: true, Version: 2})
	if err != nil {
		return -1, Explain(err, b.client.Config)
	}
	sess, err := b.store.OpenSession(spec.SessionID)
	if err != nil {
		return -1, err
	}
	script, err := runScript(sess)
	sess.Close()
	if err != nil {
		return -1, err
	}
	workdir := layout.WorkspaceDir
	if spec.Workdir != "" {
		workdir = path.Clean(spec.Workdir)
		if _, err := layout.ToHost("/x", path.Join(layout.ContainerRoot, workdir)); err != nil || workdir == "." {
			return -1, fmt.Errorf("workdir %q: not a folder of the session", spec.Workdir)
		}
	}
	// The script travels as a file on the Volume, not as an argument: a session's thousands of symlinks would
	// pass Linux's 128 KiB limit on one argument.
	if _, _, err := sy.putFiles(ctx, []*upload{uploadOfData(runScriptPath, []byte(script), 0o755)}); err != nil {
		return -1, err
	}
	cp := layout.ContainerPaths
	env := map[string]string{}
	for _, kv := range spec.SessionEnv(nil, cp.Root) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	command := append([]string{"/bin/sh", path.Join(cp.Root, runScriptPath), workdir}, spec.Argv...)
	sb, err := sdk.Sandboxes.Create(ctx, app, sdk.Images.FromRegistry(b.opts.Image, nil), &modalsdk.SandboxCreateParams{
		Command: command, Env: env, Timeout: b.opts.Timeout,
		Volumes: map[string]*modalsdk.Volume{cp.Root: vol},
	})
	if err != nil {
		return -1, Explain(err, b.client.Config)
	}
	var out sync.WaitGroup
	for _, pair := range []struct {
		r io.Reader
		w io.Writer
	}{{sb.Stdout, spec.Stdout}, {sb.Stderr, spec.Stderr}} {
		out.Add(1)
		go func() {
			defer out.Done()
			if pair.w == nil {
				pair.w = io.Discard
			}
			_, _ = io.Copy(pair.w, pair.r)
		}()
	}
	code, err := sb.Wait(ctx, nil)
	stopped := ctx.Err() != nil
	if stopped {
		// Ctrl-C: end the sandbox, and still bring back what it wrote.
		code, err = sb.Terminate(context.WithoutCancel(ctx), &modalsdk.SandboxTerminateParams{Wait: true})
	}
	out.Wait()
	if err != nil {
		return -1, Explain(err, b.client.Config)
	}
	if _, err := sy.Pull(context.WithoutCancel(ctx), run); err != nil {
		return code, fmt.Errorf("the run ended (exit %d) but pulling its changes failed: %w", code, err)
	}
	if stopped || code == 124 {
		// Killed, it could not commit: what it wrote since the Volume's last background commit arrives when Modal
		// commits the sandbox's end, maybe after this pull.
		fmt.Fprintf(errOut(spec), "sessionfs: the sandbox was stopped before it committed its last writes; run `sessionfs sync pull %s` in a minute to bring back any that arrive late\n", spec.SessionID)
	}
	return code, nil
}

// lock takes the session's run lock: one Modal run per session at a time.
func (b *Backend) lock(id string) (func(), error) {
	p := filepath.Join(b.store.Root, "sync", id+".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("a Modal run of session %q is already going (one at a time)", id)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// runScriptPath is where, on the Volume, the run's script lives: a folder of sessionfs's own that sync skips.
const runScriptPath = reservedDir + "/run.sh"

// runScript returns the script the sandbox runs (sh run.sh WORKDIR CMD ARG...): it makes the session's empty
// folders and symlinks again under the Volume's mountpoint (the Volume file API carries neither), runs the command
// in WORKDIR, then commits the Volume (sync on a v2 Volume's mountpoint) before it exits, so every write of the
// run is on the Volume when the sandbox ends, and exits with the command's code. The session is walked beneath
// its folder's descriptor (no symlink followed), and links are read, never resolved.
func runScript(d *layout.Dir) (string, error) {
	var b strings.Builder
	b.WriteString("# made by sessionfs for one run\nR=${0%/" + runScriptPath + "}\n")
	var dirs, links []string
	need := map[string]bool{} // folders to make
	full := map[string]bool{} // folders holding something
	err := d.Walk(func(rel string, st *unix.Stat_t) error {
		if rel == reservedDir {
			return layout.SkipDir
		}
		if i := strings.LastIndexByte(rel, '/'); i > 0 {
			full[rel[:i]] = true
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			link, err := d.Readlink(rel)
			if err != nil {
				return err
			}
			links = append(links, fmt.Sprintf("ln -sfn %s \"$R\"/%s\n", shellQuote(link), shellQuote(rel)))
			if parent := path.Dir(rel); parent != "." {
				need[parent] = true // a folder holding only links is not on the Volume
			}
		case unix.S_IFDIR:
			dirs = append(dirs, rel)
		}
		return nil
	})
	for _, rel := range dirs {
		if !full[rel] {
			need[rel] = true
		}
	}
	// The folders first, a couple of hundred per mkdir (each process counts: forks are slow), then the links.
	var line []string
	for _, rel := range slices.Sorted(maps.Keys(need)) {
		line = append(line, ` "$R"/`+shellQuote(rel))
		if len(line) == 200 {
			b.WriteString("mkdir -p" + strings.Join(line, "") + "\n")
			line = line[:0]
		}
	}
	if len(line) > 0 {
		b.WriteString("mkdir -p" + strings.Join(line, "") + "\n")
	}
	for _, l := range links {
		b.WriteString(l)
	}
	b.WriteString(`cd "$R/$1" || exit 125
shift
"$@"
code=$?
` + reportScript + `sync "$R"
exit $code
`)
	return b.String(), err
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func errOut(spec backends.Spec) io.Writer {
	if spec.Stderr == nil {
		return io.Discard
	}
	return spec.Stderr
}

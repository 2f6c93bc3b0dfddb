//go:build !nobackends

package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/backends/docker"
	"github.com/sessionfs/sessionfs/backends/local"
	"github.com/sessionfs/sessionfs/backends/modal"
	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/internal/config"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/session"
)

// runOptions are run's flags.
type runOptions struct {
	backend, workdir, agent string
	env, envFiles           []string
	interactive, tty        bool
	docker                  docker.Options // and its Image for modal
	timeout                 time.Duration
	landlock                landlockOpts
}

func (a *app) runCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [--backend local|docker|modal] [--image IMG] [FLAGS] ID CMD [ARG...]",
		Short: backendCommands["run"],
		Long: `run starts CMD for a session with a backend:

  local   on this host, in the session's workspace (as "sessionfs exec")
  docker  in a container with the session's folder bound at /session, CLAUDE_CONFIG_DIR=/session/.claude,
          working dir /session/workspace; nothing else of the store is visible. When the store is mounted the
          mounted folder is bound, so transcripts resume from any cwd on the host and in the container, and
          workspace/, app/, mcps/ and the canonical transcript folder are bound from the store over it, so the
          agent's own work runs at the disk's speed. A folder the session made a symlink is refused.
  modal   in a Modal Sandbox with the session's Volume at /session: the session is pushed before the run and
          the run's changes pulled after it (see "sessionfs sync"); one Modal run per session at a time. The
          sandbox lives 24h (Modal's maximum) unless --timeout; it gets no stdin, so -i and -t are refused.

The exit code is CMD's; sessionfs's own failures exit 125, a command that cannot be executed 126, one that is
not found 127 (as docker run). Ctrl-C stops the container; it is removed afterwards (with its anonymous
volumes) unless --keep. Each run is recorded in the session's session.json. The engine is found the Docker way
(DOCKER_HOST, ...). Flags of other backends are refused.

As with docker run, what follows CMD is CMD's own: sessionfs's flags go before ID (or right after it, ended by
"--"). --image alone means --backend docker. Without --image, the image is the one config.toml names: the
store's (<store>/config.toml), else yours ($XDG_CONFIG_HOME/sessionfs/config.toml, ~/.config/sessionfs/config.toml):

  [docker]
  image = "sessionfs-agent"
  user = "1000"              # --user's default
  [modal]
  image = "node:22"

The container runs as --user, else config.toml's user, else the session's owner (root's sessions as root),
so what it writes stays the owner's; the image's own user is kept when it is the owner. One that cannot read and
write the session's agent folders, or enter the mount, is refused before the start, with the fix: the agent's
turns would be lost.

-w is relative to the workspace (-w api: workspace/api; /session/... as the session sees itself), for every
backend; a folder it names that is missing is made, as docker run -w does. --env-file reads docker's env files.

--agent codex|gemini|qwen|opencode|pi|kimi|copilot also points that agent at its own folder in the session, as
the command sees it (CODEX_HOME=/session/.codex in a container), made on demand; see "sessionfs exec --help".

--landlock (local) confines the command with Landlock to its session, the system's folders and --allow's; see
"sessionfs exec --help".`,
		Example: `  make agent-image   # in sessionfs's repository: builds sessionfs-agent (the Claude CLI) from npm
  sessionfs run --image sessionfs-agent fix-login claude -p "run the tests"
  sessionfs run --backend docker -it --user 1000 fix-login claude
  sessionfs run --image sessionfs-agent --strict --home --env-file .env fix-login ./app/start.sh
  sessionfs run --backend modal --image node:22 --timeout 30m fix-login claude -p "run the tests"`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, argv, err := commandArgs(cmd, args)
			if err != nil || id == "" { // id "": --help was given, and its help printed
				return err
			}
			if len(argv) == 0 {
				return usageError("run: want ID CMD [ARG...] (a shell: sessionfs exec ID)")
			}
			if cmd.Flags().Changed("image") && !cmd.Flags().Changed("backend") {
				o.backend = "docker"
			}
			if err := checkBackendFlags(cmd, o.backend); err != nil {
				return err
			}
			ag, err := checkAgent(o.agent)
			if err != nil {
				return err
			}
			ll, err := o.landlock.command()
			if err != nil {
				return err
			}
			return a.runIn(id, argv, &o, ag, ll)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // run ID CMD -x: -x is CMD's
	f.StringVar(&o.backend, "backend", "local", "where to run: local, docker or modal")
	f.StringVar(&o.docker.Image, "image", "", "the container image (docker, modal; alone it means --backend docker; default: config.toml's)")
	f.DurationVar(&o.timeout, "timeout", modal.DefaultTimeout, "the sandbox's lifetime, whole seconds up to 24h (modal)")
	envFlags(cmd, &o.env, &o.envFiles)
	f.StringVarP(&o.workdir, "workdir", "w", "", workdirHelp)
	f.StringVarP(&o.docker.User, "user", "u", "", userHelp)
	f.StringVar(&o.docker.Network, "network", "", "the container's network (docker run --network)")
	f.BoolVarP(&o.interactive, "interactive", "i", false, "attach stdin")
	f.BoolVarP(&o.tty, "tty", "t", false, "allocate a TTY")
	f.BoolVar(&o.docker.Strict, "strict", false, "bind app/ and mcps/ read-only (docker)")
	f.BoolVar(&o.docker.Home, "home", false, "HOME=/session/home, whose .claude and .claude.json lead to the session's (docker)")
	f.StringArrayVarP(&o.docker.Volumes, "volume", "v", nil, "an extra bind SRC:DST[:ro], as docker run -v takes it (repeatable)")
	f.BoolVar(&o.docker.Keep, "keep", false, "keep the container after it exits (docker)")
	agentFlag(cmd, &o.agent)
	landlockFlags(cmd, &o.landlock)
	a.waitFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("backend", fixedValues("local", "docker", "modal"))
	return cmd
}

// runIn runs argv in session id with o's backend, agent ag and confinement ll (checked), as run does. Bad -e or
// -w is refused first, then the lease is taken before anything is touched (a refused runner changes nothing), and
// the session is readied for its agent only once the backend is open.
func (a *app) runIn(id string, argv []string, o *runOptions, ag *agents.Agent, ll *confine.Command) error {
	vars, err := commandEnv(o.envFiles, o.env)
	if err != nil {
		return err
	}
	workdir, err := sessionWorkdir(o.workdir)
	if err != nil {
		return err
	}
	if err := a.configDefaults(o); err != nil {
		return err
	}
	s, m, r, err := a.leaseSession(id)
	if err != nil {
		return err
	}
	defer r.Release()
	dir, mounted := sessionDir(s, m.ID)
	spec := backends.Spec{SessionDir: dir, Argv: argv, Agent: ag.Name, Env: vars, Workdir: workdir, Stdout: os.Stdout,
		Stderr: os.Stderr, TTY: o.tty, Landlock: ll}
	if o.interactive {
		spec.Stdin = os.Stdin
	}
	if o.tty && !term.IsTerminal(int(os.Stdin.Fd())) {
		return usageError("run: -t needs a terminal on stdin")
	}
	creds, credWarnings := session.CredentialsFor(s, m.ID, o.backend) // new --share-credentials: bound read-only in docker
	warnEach(credWarnings)
	o.docker.Credentials = creds
	b, closeBackend, err := o.openBackend(s, dir, mounted)
	if err != nil {
		return err
	}
	defer closeBackend()
	// The session is readied once the run can start: a run refused above changes nothing in it.
	root := layout.ContainerRoot // as a container or a sandbox sees the session
	if o.backend == "local" {
		root = dir
	}
	if err := makeWorkdir(s, m.ID, workdir); err != nil {
		return err
	}
	if o.backend == "local" && ll == nil {
		if err := session.ApprovedOnHost(s, m.ID, mountpoint(s), workdir, ag); err != nil {
			return err
		}
	}
	warnings, err := session.Ready(s, m.ID, ag, mountpoint(s), root, workdir)
	warnEach(warnings)
	if err != nil {
		return err
	}
	start := time.Now()
	err = runWith(r, b, spec, o.docker.Image)
	resumeHint(s, m.ID, spec, start)
	return err
}

// configDefaults sets what config.toml says for o's backend and its flags did not: the image and the container's
// user.
func (a *app) configDefaults(o *runOptions) error {
	if o.backend != "docker" && o.backend != "modal" {
		return nil
	}
	root := ""
	if s, err := a.openStore(); err == nil {
		root = s.Root
	}
	c, err := config.Load(root)
	if err != nil {
		return usageError(err.Error())
	}
	image := c.Docker.Image
	if o.backend == "modal" {
		image = c.Modal.Image
	} else if o.docker.User == "" {
		o.docker.User = c.Docker.User
	}
	o.docker.Image = cmp.Or(o.docker.Image, image)
	if o.docker.Image == "" {
		return usageError(fmt.Sprintf("--backend %s needs an image: give --image IMG, or set it in %s or %s:\n  [%s]\n  image = \"IMG\"",
			o.backend, config.StoreFile(cmp.Or(root, "<store>")), cmp.Or(config.UserFile(), "~/.config/sessionfs/config.toml"), o.backend))
	}
	return nil
}

// openBackend is the backend o names, for the session at dir on this host (mounted: in the store's mount);
// closeBackend releases it.
func (o *runOptions) openBackend(s *layout.Store, dir string, mounted bool) (b backends.Backend, closeBackend func(), err error) {
	switch o.backend {
	case "local":
		if !mounted {
			warnNotMounted(s, "running in", dir, o.agent)
		}
		return local.Backend{}, func() {}, nil
	case "docker":
		if m, ok := mount.Find(s.Root); ok && mounted {
			o.docker.Mount = &docker.Mounted{Mountpoint: m.Mountpoint, AllowOther: m.AllowOther, Owner: m.Owner}
		}
		if !mounted {
			warnNotMounted(s, "binding", dir, o.agent)
		}
		d, err := docker.New(o.docker)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { _ = d.Close() }, nil
	case "modal":
		c, err := modal.Connect()
		if err != nil {
			return nil, nil, err
		}
		mb, err := modal.NewBackend(c, s, modal.Options{Image: o.docker.Image, Timeout: o.timeout})
		if err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		var finish func()
		mb.Progress, mb.Total, finish = transferBar("sync")
		return mb, func() { finish(); _ = c.Close() }, nil
	}
	return nil, nil, unknownBackend(o.backend)
}

const userHelp = "the container user, as docker run --user takes it (default: config.toml's, else the session's owner)"

// runBackends are the backends --backend names.
var runBackends = []string{"local", "docker", "modal"}

func unknownBackend(name string) error {
	return usageError(fmt.Sprintf("unknown backend %q (want local, docker or modal)", name))
}

// backendFlags are the flags only some backends take; any other backend refuses them rather than ignore them.
var backendFlags = map[string][]string{
	"image":       {"docker", "modal"},
	"interactive": {"local", "docker"}, // a Modal sandbox is given no stdin
	"tty":         {"local", "docker"},
	"timeout":     {"modal"},
	"user":        {"docker"},
	"network":     {"docker"},
	"strict":      {"docker"},
	"home":        {"docker"},
	"volume":      {"docker"},
	"keep":        {"docker"},
	"landlock":    {"local"}, // a container or a sandbox has its own walls
	"allow":       {"local"},
	"allow-read":  {"local"},
}

func checkBackendFlags(cmd *cobra.Command, backend string) error {
	if !slices.Contains(runBackends, backend) {
		return unknownBackend(backend)
	}
	for flag, backends := range backendFlags {
		if cmd.Flags().Changed(flag) && !slices.Contains(backends, backend) {
			return usageError(fmt.Sprintf("--%s applies to --backend %s, not %s", flag, strings.Join(backends, " or "), backend))
		}
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/backends/local"
	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

func (a *app) execCmd() *cobra.Command {
	var env []string
	var workdir, agent string
	var lopts landlockOpts
	cmd := &cobra.Command{
		Use:   "exec ID [--agent AGENT] [--landlock [--allow PATH]...] -- CMD [ARG...]",
		Short: "Run a command on this host in a session (cwd: its workspace; CLAUDE_CONFIG_DIR: its .claude)",
		Long: `exec runs CMD in the session's workspace with CLAUDE_CONFIG_DIR set to the session's .claude. When the
store is mounted, it runs in the mounted path, so transcripts land in the session's one transcript folder
whatever cwd the command moves to, in a private mount namespace where workspace/, app/, mcps/ and the
canonical transcript folder are the store's own folders (same paths, the disk's speed; for a normal user a
user namespace mapping it to itself, so set-user-ID programs such as sudo do not work there). The exit code
is CMD's; sessionfs's own failures exit 125, a command that cannot be executed 126, one not found 127.
One runner per session, on every host that shares the store: while exec, run or resume runs in a session,
another one fails at once, naming the host, pid and start of the holder (exit 125), or waits with --wait.

--agent codex|gemini|qwen|opencode also points that agent at its own folder in the session (CODEX_HOME=.codex,
GEMINI_CLI_HOME=the session, whose .gemini it uses, QWEN_HOME=.qwen, opencode's XDG_DATA_HOME, XDG_CONFIG_HOME
and XDG_STATE_HOME=.opencode/data, config, state), made on demand; the API settings (OPENAI_BASE_URL,
GOOGLE_GEMINI_BASE_URL, keys, OPENCODE_CONFIG) stay this shell's. opencode's conversations are moved to the
run's cwd first: opencode continues only the cwd's own.

` + landlockHelp,
		Example: `  sessionfs exec fix-login -- claude
  sessionfs exec fix-login -- claude --continue
  sessionfs exec fix-login --agent codex -- codex exec resume --all --last
  sessionfs exec fix-login --workdir workspace/api -- make test
  sessionfs exec fix-login --landlock --allow-read ~/.local/share/claude -- claude`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return usageError("exec: want ID -- CMD [ARG...]")
			}
			vars, err := parseEnv(env)
			if err != nil {
				return err
			}
			wd, err := sessionWorkdir(workdir)
			if err != nil {
				return err
			}
			if _, err := checkAgent(agent); err != nil {
				return err
			}
			ll, err := lopts.command()
			if err != nil {
				return err
			}
			return a.execIn(args[0], args[1:], func(sp *backends.Spec) { sp.Env, sp.Workdir, sp.Agent, sp.Landlock = vars, wd, agent, ll })
		},
	}
	cmd.Flags().StringArrayVarP(&env, "env", "e", nil, envHelp)
	cmd.Flags().StringVarP(&workdir, "workdir", "w", "", "working directory relative to the session (default workspace)")
	agentFlag(cmd, &agent)
	landlockFlags(cmd, &lopts)
	a.waitFlag(cmd)
	return cmd
}

// execIn runs argv on this host in session id (through the mount when mounted), as exec does.
func (a *app) execIn(id string, argv []string, adjust ...func(*backends.Spec)) error {
	s, m, r, err := a.leaseSession(id)
	if err != nil {
		return err
	}
	defer r.Release()
	dir, mounted := sessionDir(s, m.ID)
	if err := session.Seed(s, m.ID, mountpoint(s)); err != nil {
		warnf("%v", err)
	}
	if !mounted {
		warnf("%s: running in %s; transcripts resume only from the same cwd", notMounted(s), dir)
	}
	spec := backends.Spec{SessionDir: dir, Argv: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for _, f := range adjust {
		f(&spec)
	}
	if ag, err := all.ByName(spec.Agent); err == nil {
		warnings, err := session.PrepareAgent(s, m.ID, ag, mountpoint(s))
		warnEach(warnings)
		if err != nil {
			return err
		}
		warnEach(session.LaunchAgent(s, m.ID, ag, dir, spec.Workdir))
	}
	return runWith(r, local.Backend{}, spec, "")
}

// runWith runs spec with b in the session r holds, and turns the command's exit code into the CLI's. A backend
// that relays signals to its command (local) gets them; for the others SIGINT and SIGTERM cancel the run (the
// backend stops the command) instead of killing the CLI.
func runWith(r *backends.Runner, b backends.Backend, spec backends.Spec, image string) error {
	ctx, stop := context.Background(), func() {}
	if f, ok := b.(interface{ ForwardsSignals() bool }); !ok || !f.ForwardsSignals() {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	defer stop()
	code, err := r.Run(ctx, b, spec, image)
	switch {
	case err != nil && code > 0:
		return codedError{code, err}
	case err != nil:
		return err
	case code != 0:
		return exitCode(code)
	}
	return nil
}

// waitFlag gives a command that runs something in a session (exec, run, resume) the --wait flag.
func (a *app) waitFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&a.wait, "wait", false, "when another runner (on any host sharing the store) has the session, wait for it instead of failing")
}

// leaseSession opens session arg and takes its run lease for a command that runs in it (backends.Lease). Without
// --wait a held lease fails at once, naming its holder; with it, the wait is said once on stderr.
func (a *app) leaseSession(arg string) (*layout.Store, *layout.Meta, *backends.Runner, error) {
	s, m, err := a.session(arg)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := backends.Lease(context.Background(), s, m.ID, a.wait, func(re *layout.RunningError) {
		fmt.Fprintf(os.Stderr, "sessionfs: %s; waiting for it\n", re)
	})
	if errors.Is(err, layout.ErrRunning) {
		return nil, nil, nil, fmt.Errorf("%w (--wait waits for it)", err)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	r.Warn = func(err error) { warnf("%v", err) }
	return s, m, r, nil
}

const envHelp = "set KEY=VALUE in the command's environment; KEY alone passes this shell's value (repeatable)"

// parseEnv checks -e values as docker takes them: KEY=VALUE sets KEY; KEY alone passes this process's value of
// KEY, or nothing when it has none. An empty key, or one holding '=', whitespace or NUL, is refused.
func parseEnv(vals []string) ([]string, error) {
	out := make([]string, 0, len(vals))
	for _, kv := range vals {
		k, v, hasValue := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " \t\n\x00") || strings.ContainsRune(v, 0) {
			return nil, usageError(fmt.Sprintf("-e %q: want KEY=VALUE, or KEY to pass this shell's value", kv))
		}
		if !hasValue {
			if v, ok := os.LookupEnv(k); ok {
				out = append(out, k+"="+v)
			}
			continue
		}
		out = append(out, kv)
	}
	return out, nil
}

// sessionWorkdir checks -w: a folder relative to the session, or an absolute path under /session (as the
// session's processes see it). Any other absolute path (-w /etc) is refused rather than silently taken as
// relative to the session.
func sessionWorkdir(w string) (string, error) {
	if !path.IsAbs(w) {
		return w, nil
	}
	clean := path.Clean(w)
	if clean == layout.ContainerRoot {
		return ".", nil
	}
	rel, ok := strings.CutPrefix(clean, layout.ContainerRoot+"/")
	if !ok {
		return "", usageError(fmt.Sprintf("-w %s: outside the session (give a folder relative to the session, e.g. workspace/api, or one under %s)", w, layout.ContainerRoot))
	}
	return rel, nil
}

package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/backends/local"
	"github.com/sessionfs/sessionfs/session"
)

func (a *app) execCmd() *cobra.Command {
	var env, envFiles []string
	var workdir, agent string
	var lopts landlockOpts
	cmd := &cobra.Command{
		Use:   "exec [FLAGS] ID [CMD [ARG...]]",
		Short: "Run a command on this host in a session (cwd: its workspace; CLAUDE_CONFIG_DIR: its .claude)",
		Long: `exec runs CMD (without one, your shell: $SHELL, else /bin/sh) in the session's workspace with CLAUDE_CONFIG_DIR set to the session's .claude. When the
store is mounted, it runs in the mounted path, so transcripts land in the session's one transcript folder
whatever cwd the command moves to, in a private mount namespace where workspace/, app/, mcps/ and the
canonical transcript folder are the store's own folders (same paths, the disk's speed; for a normal user a
user namespace mapping it to itself, so set-user-ID programs such as sudo do not work there). The exit code
is CMD's; sessionfs's own failures exit 125, a command that cannot be executed 126, one not found 127.
As with docker exec, what follows CMD is CMD's own: sessionfs's flags go before ID (or right after it, ended
by "--"). -w is relative to the workspace (-w api: workspace/api; /session/... as the session sees itself), and
a folder it names that is missing is made, as docker run -w does. When a claude run ends, the command that
resumes its conversation from anywhere (sessionfs resume UUID) is printed on stderr.
One runner per session, on every host that shares the store: while exec, run or resume runs in a session,
another one fails at once, naming the host, pid and start of the holder (exit 125), or waits with --wait.

--agent codex|gemini|qwen|opencode|pi|kimi|copilot also points that agent at its own folder in the session
(CODEX_HOME=.codex, GEMINI_CLI_HOME=the session, whose .gemini it uses, QWEN_HOME=.qwen, opencode's XDG_DATA_HOME, XDG_CONFIG_HOME
and XDG_STATE_HOME=.opencode/data, config, state, PI_CODING_AGENT_DIR=.pi, KIMI_CODE_HOME=.kimi-code,
COPILOT_HOME=.copilot), made on demand; the API settings (OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL, keys,
OPENCODE_CONFIG) stay this shell's. opencode's and Kimi's conversations are moved to the run's cwd first: they
continue only the cwd's own.

` + landlockHelp,
		Example: `  sessionfs exec fix-login
  sessionfs exec fix-login claude
  sessionfs exec fix-login claude --continue
  sessionfs exec --agent codex fix-login codex exec resume --all --last
  sessionfs exec -w api --env-file .env fix-login make test
  sessionfs exec --landlock --allow-read ~/.local/share/claude fix-login claude`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, argv, err := commandArgs(cmd, args)
			if err != nil || id == "" { // id "": --help was given, and its help printed
				return err
			}
			if len(argv) == 0 {
				argv = []string{userShell()}
			}
			vars, err := commandEnv(envFiles, env)
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
			return a.execIn(id, argv, func(sp *backends.Spec) { sp.Env, sp.Workdir, sp.Agent, sp.Landlock = vars, wd, agent, ll })
		},
	}
	cmd.Flags().SetInterspersed(false) // exec ID CMD -x: -x is CMD's
	envFlags(cmd, &env, &envFiles)
	cmd.Flags().StringVarP(&workdir, "workdir", "w", "", workdirHelp)
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
	spec := backends.Spec{SessionDir: dir, Argv: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for _, f := range adjust {
		f(&spec)
	}
	if !mounted {
		warnNotMounted(s, "running in", dir, spec.Agent)
	}
	if err := makeWorkdir(s, m.ID, spec.Workdir); err != nil {
		return err
	}
	ag, _ := all.ByName(spec.Agent) // nil: none but Claude
	if spec.Landlock == nil {
		if err := session.ApprovedOnHost(s, m.ID, mountpoint(s), spec.Workdir, ag); err != nil {
			return err
		}
	}
	warnings, err := session.Ready(s, m.ID, ag, mountpoint(s), dir, spec.Workdir)
	warnEach(warnings)
	if err != nil {
		return err
	}
	start := time.Now()
	err = runWith(r, local.Backend{}, spec, "")
	resumeHint(s, m.ID, spec, start)
	return err
}

// userShell is the shell exec starts when given no command: $SHELL, else /bin/sh.
func userShell() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return sh
	}
	return "/bin/sh"
}

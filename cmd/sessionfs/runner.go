// What the commands that run something in a session share (exec, run, resume): the run lease, the command's
// environment and working folder as given on the command line, and the run itself with its exit code.

package main

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
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

// runWith runs spec with b in the session r holds, and turns the command's exit code into the CLI's. A backend
// that relays signals to its command (local) gets them; for the others SIGINT and SIGTERM cancel the run (the
// backend stops the command) instead of killing the CLI.
func runWith(r *backends.Runner, b backends.Backend, spec backends.Spec, image string) error {
	ctx, stop := context.Background(), func() {}
	if f, ok := b.(interface{ ForwardsSignals() bool }); !ok || !f.ForwardsSignals() {
		// SIGHUP too (the terminal closed): the CLI must not die and free the run lease while its container runs on.
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
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

// cwdCaveat is what a run without the mount cannot do, said only of what it is true of: Claude Code since
// 2.1.234 files every cwd's transcripts in the session's one folder (CLAUDE_CODE_PROJECT_DIR_NAME, which sessionfs
// sets) and resumes them from any cwd; older ones, and the other agents with cwd-keyed folders, resume a
// conversation only from the cwd it began in. "" when there is nothing to say.
func cwdCaveat(agent string) string {
	a, err := all.ByName(agent)
	switch {
	case agent == "" || (err == nil && a.Name == claude.Agent.Name):
		return "Claude Code before 2.1.234 resumes a conversation only from the cwd it began in (sessionfs mount lifts that)"
	case err == nil && len(a.Views) > 0:
		return a.Name + " resumes a conversation only from the cwd it began in (sessionfs mount lifts that)"
	}
	return ""
}

// warnNotMounted says that the session at dir is used (how: "running in", "binding") without the store's mount,
// when that matters for agent.
func warnNotMounted(s *layout.Store, how, dir, agent string) {
	if c := cwdCaveat(agent); c != "" {
		warnf("%s: %s %s; %s", notMounted(s), how, dir, c)
	}
}

// resumeHint prints on stderr, after a claude run (started at start) in session id, the command that resumes its
// conversation from any shell: claude's own "claude --resume UUID" works only in the session's environment. The
// conversation is the one the run made or continued: the newest transcript it touched.
func resumeHint(s *layout.Store, id string, spec backends.Spec, start time.Time) {
	if len(spec.Argv) == 0 || filepath.Base(spec.Argv[0]) != "claude" || (spec.Agent != "" && spec.Agent != claude.Agent.Name) {
		return
	}
	if uuid := newestTranscript(s, id, start.Add(-transcriptSlack)); uuid != "" {
		fmt.Fprintf(os.Stderr, "Resume this conversation from any shell with: sessionfs resume %s\n", resumeArgs(s, id, uuid))
	}
}

// resumeArgs are what resume takes to carry conversation uuid on in session id: the uuid alone, or the session
// too when another session holds the uuid (a fork, an import with --as): "resume UUID" resumes the first copy.
func resumeArgs(s *layout.Store, id, uuid string) string {
	among, err := s.ConversationCandidates(func(conv string) bool { return strings.EqualFold(conv, uuid) })
	if err != nil {
		return id + " " + uuid // the index cannot say: naming the session is never wrong
	}
	holders, err := claude.HoldersAmong(s, uuid, among)
	if err != nil || len(holders) != 1 || holders[0].ID != id {
		return id + " " + uuid
	}
	return uuid
}

// transcriptSlack allows for the kernel's coarse file clock, a tick behind time.Now.
const transcriptSlack = 100 * time.Millisecond

// newestTranscript is the conversation id of session id's newest transcript modified since since, in any of
// its projects folders (the canonical one, or a cwd's while the store was not mounted); "" when none was.
func newestTranscript(s *layout.Store, id string, since time.Time) string {
	d, err := s.OpenSession(id)
	if err != nil {
		return ""
	}
	defer d.Close()
	folders, _ := d.ReadDir(layout.ProjectsDir)
	var newest string
	var at time.Time
	for _, f := range folders {
		if !f.IsDir() {
			continue
		}
		folder := layout.ProjectsDir + "/" + f.Name()
		files, _ := d.ReadDir(folder)
		for _, t := range files {
			uuid, ok := strings.CutSuffix(t.Name(), ".jsonl")
			if !ok || !t.Type().IsRegular() || layout.ValidateID(uuid) != nil {
				continue
			}
			st, err := d.Lstat(folder + "/" + t.Name()) // beneath the session: the entry's own Info would stat a path
			if mtime := time.Unix(st.Mtim.Unix()); err == nil && !mtime.Before(since) && mtime.After(at) {
				newest, at = uuid, mtime
			}
		}
	}
	return newest
}

// commandArgs splits exec's and run's arguments as docker exec's: the session's id, then the command with its
// arguments, which are the command's own (the command sets cmd.Flags().SetInterspersed(false)). A "--" before
// the command is taken as earlier versions wrote it, and so are flags of sessionfs right after the id
// (exec ID -w api -- make): they end at the first word that is not one, or at "--". --help among them prints
// the help and gives no id.
func commandArgs(cmd *cobra.Command, args []string) (id string, argv []string, err error) {
	id, argv = args[0], args[1:]
	if cmd.ArgsLenAtDash() != 0 && len(argv) > 0 && argv[0] != "--" && strings.HasPrefix(argv[0], "-") {
		fs := cmd.Flags()
		if err := fs.Parse(argv); err != nil {
			return "", nil, usageError(fmt.Sprintf("%s: %v", cmd.Name(), err))
		}
		if help, _ := fs.GetBool("help"); help {
			return "", nil, cmd.Help()
		}
		return id, fs.Args(), nil
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	return id, argv, nil
}

const workdirHelp = "working directory relative to the workspace, or /session/...; made when missing (default: the workspace)"

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

const envFileHelp = "read variables from FILE, as docker --env-file does: KEY=VALUE lines, # comments, KEY alone passes this shell's value; -e wins (repeatable)"

// envFlags gives exec and run -e and --env-file.
func envFlags(cmd *cobra.Command, env, envFiles *[]string) {
	cmd.Flags().StringArrayVarP(env, "env", "e", nil, envHelp)
	cmd.Flags().StringArrayVar(envFiles, "env-file", nil, envFileHelp)
}

// commandEnv is the environment --env-file's files and then -e's values give, in that order (a later pair wins).
func commandEnv(files, env []string) ([]string, error) {
	var vals []string
	for _, f := range files {
		lines, err := readEnvFile(f)
		if err != nil {
			return nil, err
		}
		vals = append(vals, lines...)
	}
	fromFiles, err := parseEnv(vals)
	if err != nil {
		return nil, err
	}
	fromFlags, err := parseEnv(env)
	if err != nil {
		return nil, err
	}
	return append(fromFiles, fromFlags...), nil
}

// maxEnvFile bounds an env file: a variable list, not a data file.
const maxEnvFile = 1 << 20

// readEnvFile reads an env file as docker does: one KEY=VALUE or KEY per line, the value taken as written (no
// quotes removed), leading blanks and a UTF-8 BOM ignored, blank lines and lines starting with # skipped.
func readEnvFile(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, usageError(fmt.Sprintf("--env-file: %v", err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEnvFile+1))
	if err != nil {
		return nil, usageError(fmt.Sprintf("--env-file %s: %v", name, err))
	}
	if len(b) > maxEnvFile {
		return nil, usageError(fmt.Sprintf("--env-file %s: larger than %d bytes", name, maxEnvFile))
	}
	var out []string
	for i, line := range strings.Split(strings.TrimPrefix(string(b), "\uFEFF"), "\n") {
		line = strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, _ := strings.Cut(line, "=")
		if k == "" || strings.ContainsAny(k, " \t\x00") || !utf8.ValidString(line) || strings.ContainsRune(line, 0) {
			return nil, usageError(fmt.Sprintf("--env-file %s, line %d: want KEY=VALUE, or KEY to pass this shell's value", name, i+1))
		}
		out = append(out, line)
	}
	return out, nil
}

// sessionWorkdir checks -w: a folder relative to the workspace (-w api is workspace/api; -w .. the session's
// root), or an absolute path under /session (as the session's processes see it), and gives it relative to the
// session. A folder outside the session (-w ../.., -w /etc) is refused rather than silently taken as inside it.
func sessionWorkdir(w string) (string, error) {
	if w == "" {
		return "", nil
	}
	outside := usageError(fmt.Sprintf("-w %s: outside the session (give a folder relative to the workspace, e.g. api, or one under %s)", w, layout.ContainerRoot))
	if !path.IsAbs(w) {
		rel := path.Join(layout.WorkspaceDir, w)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "", outside
		}
		return rel, nil
	}
	clean := path.Clean(w)
	if clean == layout.ContainerRoot {
		return ".", nil
	}
	rel, ok := strings.CutPrefix(clean, layout.ContainerRoot+"/")
	if !ok {
		return "", outside
	}
	return rel, nil
}

// makeWorkdir makes the run's working folder (relative to session id) when it is missing, as docker run -w does,
// beneath the session's descriptor and owned as the session is. Anything already there (a file, a link) is left
// for the backend to refuse.
func makeWorkdir(s *layout.Store, id, workdir string) error {
	if workdir == "" || workdir == "." {
		return nil
	}
	d, err := s.OpenSession(id)
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Lstat(workdir); !errors.Is(err, unix.ENOENT) {
		return nil
	}
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	if err := d.MkdirAll(workdir, 0o755, uid, gid); err != nil {
		return fmt.Errorf("-w: make %s in the session: %w", workdir, err)
	}
	return nil
}

// What the commands that run something in a session share (exec, run, resume): the run lease, the command's
// environment and working folder as given on the command line, and the run itself with its exit code.

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

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/internal/config"
	"github.com/sessionfs/sessionfs/ui"
)

func (a *app) uiCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ui [--listen ADDR]",
		Short: "Serve a web page of the store: sessions, conversations (live), runs, workspaces, search",
		Long: `ui serves a local web page to look at the store's sessions, and prints its URL (with a random token) as
the first line of its output: open it in a browser. It shows every session (labels, created, last active,
size, conversations per agent, runs in progress and the last exit code; filtered by label and agent, sorted),
a session's conversations, runs and the commands that resume each conversation (on this host, in a container,
on Modal) with copy buttons, a conversation as log prints it (tool calls folded to one line, subagents nested)
growing live as the agent writes, the workspace as a read-only tree, and search (as sessionfs search), each hit
a link to its place in its conversation. The pages read without JavaScript; a small embedded script adds the
live updates and the copy buttons.

It is read-only: nothing it serves changes a session. Everything a session wrote is shown escaped, under a
strict Content-Security-Policy (no script of a session's runs), files as text or downloads, never as HTML.

It listens on 127.0.0.1 on a free port; --listen ADDR picks the address (127.0.0.1:8080). Every request needs
the token (the URL's, then a cookie); on an address that is not loopback anyone who can reach it and has the
token sees every session: a warning says so. It serves until Ctrl-C (SIGINT) or SIGTERM, then exits 0.`,
		Example: `  sessionfs ui
  sessionfs ui --listen 127.0.0.1:8080
  ssh -L 8080:127.0.0.1:8080 host sessionfs ui --listen 127.0.0.1:8080   # from another machine`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.runUI(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), listen)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the address to listen on, HOST:PORT (port 0: a free one)")
	return cmd
}

// runUI serves the store's page on listen until ctx ends; the URL is the first line written to out.
func (a *app) runUI(ctx context.Context, out, errOut io.Writer, listen string) error {
	s, err := a.openStore()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usageError(fmt.Sprintf("ui: cannot listen on %s: %v (--listen HOST:PORT, e.g. 127.0.0.1:8080)", listen, err))
	}
	defer ln.Close()
	addr := ln.Addr().String()
	token, err := ui.NewToken()
	if err != nil {
		return err
	}
	prefix, err := ui.NewBase()
	if err != nil {
		return err
	}
	logger := log.New(errOut, "sessionfs ui: ", log.LstdFlags)
	o := ui.Options{Store: s, Addr: addr, Token: token, Base: prefix, Log: logger}
	resumeSetUp(&o, s.Root)
	srv, err := ui.New(o)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, srv.URL()); err != nil {
		return err
	}
	if !ui.Loopback(addr) {
		fmt.Fprintf(errOut, "sessionfs ui: warning: %s is not a loopback address: whoever reaches it with the token sees every session of %s\n", addr, s.Root)
	}
	fmt.Fprintf(errOut, "sessionfs ui: serving %s; open the URL above (Ctrl-C stops)\n", s.Root)
	// Requests' contexts end with the server: the live streams stop at once on Ctrl-C.
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: logger,
		BaseContext: func(net.Listener) context.Context { return base }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	cancel()
	shut, cancelShut := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShut()
	if err := hs.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// resumeSetUp sets how the page's resume commands run on this set-up: sessionfs named as PATH finds it, --store
// unless the store is the default one (not $SESSIONFS_STORE's: another shell may not have it), and in a container and on Modal only with what they need: the image
// config.toml names (else make agent-image's, the README's) and the API key's variable, passed when it is set.
func resumeSetUp(o *ui.Options, storeRoot string) {
	o.Command = sessionfsCommand()
	if !isDefaultStore(storeRoot) {
		o.Command += " --store " + ui.ShellWord(storeRoot)
	}
	c, err := config.Load(storeRoot)
	if err != nil {
		return // a broken config.toml: the host's command alone, which run and resume would refuse
	}
	o.Docker = "-e ANTHROPIC_API_KEY"
	if c.Docker.Image == "" {
		o.Docker = "--image " + ui.ShellWord(agentImage) + " " + o.Docker
	}
	o.Modal = c.Modal.Image != ""
}

// agentImage is the image make agent-image builds, the README's.
const agentImage = "sessionfs-agent"

// sessionfsCommand is how a pasted command runs this sessionfs: by name when PATH finds this binary, else by its
// path.
func sessionfsCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "sessionfs"
	}
	if found, err := exec.LookPath("sessionfs"); err == nil {
		if a, err1 := filepath.EvalSymlinks(found); err1 == nil {
			if b, err2 := filepath.EvalSymlinks(self); err2 == nil && a == b {
				return "sessionfs"
			}
		}
	}
	return ui.ShellWord(self)
}

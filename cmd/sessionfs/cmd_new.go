package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/session"
)

// newOptions are new's flags.
type newOptions struct {
	labels             []string
	profile            string
	asJSON, shareCreds bool
	noUserSettings     bool
}

func (a *app) newCmd() *cobra.Command {
	var o newOptions
	cmd := &cobra.Command{
		Use:   "new [ID]",
		Short: "Create a session folder (an id is generated when none is given)",
		Long: `Create a session folder (an id is generated when none is given).

A new session starts as your Claude, not a fresh install: its .claude takes, from the home ($HOME) of the user
who runs new, ~/.claude/settings.json (each top-level key the session's own settings lack: --profile's and
sessionfs's own seeds win, such as transcripts never aged out; apiKeyHelper and env entries named like a
credential, *KEY*, *TOKEN*, *SECRET*, are left out) and, from ~/.claude.json, only the onboarding and approval
state (hasCompletedOnboarding, lastOnboardingVersion, customApiKeyResponses, theme, lastReleaseNotesSeen and a
few dialogs' answers), written to the session's .claude/.claude.json, which Claude reads with
CLAUDE_CONFIG_DIR=<session>/.claude. Never oauthAccount, API keys, mcpServers nor projects. A file past its
bound (1 MiB, 16 MiB) or not a JSON object is left out with a warning. --no-user-settings, or
SESSIONFS_NO_USER_SETTINGS=1, opts out. Sessions made otherwise (mkdir through the mount, a CSI volume, an
import, a fork) take nothing from anyone's home.

--share-credentials shares your login (~/.claude/.credentials.json), never copied: the session's
.claude/.credentials.json is a link to it, which a local run (exec, run --backend local) follows, and the store
records the sharing, beyond the session's reach. run --backend docker binds the file read-only at that same path
in the container, so the link leads to it there too (the container user must be able to read it: root, or
your uid; a token Claude refreshes inside is not saved back). Modal: not copied into the Sandbox (a warning;
log in there or pass -e ANTHROPIC_API_KEY). Kubernetes pods (CSI): not carried; the link dangles there.`,
		Example: `  sessionfs new                      # prints the generated id
  sessionfs new fix-login --label team=web --profile ~/claude-profiles/web
  ID=$(sessionfs new) && sessionfs exec "$ID" -- claude`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runNew(cmd.OutOrStdout(), args, o)
		},
	}
	cmd.Flags().StringArrayVarP(&o.labels, "label", "l", nil, "a label KEY=VALUE (repeatable; Kubernetes' rule: see sessionfs label --help)")
	cmd.Flags().StringVar(&o.profile, "profile", "", "a .claude template folder to copy into the session (CLAUDE.md, settings.json, skills/, ...)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the session's metadata as JSON")
	cmd.Flags().BoolVar(&o.shareCreds, "share-credentials", false, "use your ~/.claude/.credentials.json (a link; bound read-only in docker runs), so the session needs no login of its own")
	cmd.Flags().BoolVar(&o.noUserSettings, "no-user-settings", false, "start as a fresh Claude install: take nothing from your ~/.claude/settings.json and ~/.claude.json")
	return cmd
}

// runNew makes session args[0] (a generated id when none is given) and prints its id, or its metadata.
func (a *app) runNew(w io.Writer, args []string, o newOptions) error {
	s, err := a.createStore()
	if err != nil {
		return err
	}
	id := layout.NewID(time.Now())
	if len(args) == 1 {
		id = args[0]
	}
	lm, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	opts := session.Options{CreateOptions: layout.CreateOptions{Labels: lm, Profile: o.profile}, Mountpoint: mountpoint(s), Warn: func(w string) { warnf("%s", w) }}
	if !o.noUserSettings {
		var warnings []string
		opts.User, warnings = session.UserClaude()
		warnEach(warnings)
	}
	m, err := session.Create(s, id, opts)
	if err != nil {
		return err
	}
	if o.shareCreds {
		warnings, err := session.ShareCredentials(s, id)
		warnEach(warnings)
		if err != nil {
			return fmt.Errorf("session %q created, but sharing credentials failed: %w", id, err)
		}
	}
	if o.asJSON {
		return printJSON(w, viewOf(s, mountpoint(s), m, s.Describe(id)))
	}
	fmt.Fprintln(w, id)
	return nil
}

func parseLabels(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Sprintf("label %q: want KEY=VALUE", kv))
		}
		if err := layout.ValidateLabel(k, v); err != nil {
			return nil, usageError(err.Error())
		}
		m[k] = v
	}
	return m, nil
}

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
}

func (a *app) newCmd() *cobra.Command {
	var o newOptions
	cmd := &cobra.Command{
		Use:   "new [ID]",
		Short: "Create a session folder (an id is generated when none is given)",
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
	cmd.Flags().BoolVar(&o.shareCreds, "share-credentials", false, "use your ~/.claude/.credentials.json (a link), so the session needs no login of its own")
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
	m, err := session.Create(s, id, session.Options{CreateOptions: layout.CreateOptions{Labels: lm, Profile: o.profile}, Mountpoint: mountpoint(s)})
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

package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
)

func (a *app) labelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "label ID [KEY=VALUE|KEY-...]",
		Short: "Print a session's labels, or set (KEY=VALUE) or remove (KEY-) them",
		Long: "label sets or removes labels, as kubectl label does; with no KEY, it prints the session's labels, one " +
			"KEY=VALUE a line. Labels follow Kubernetes' rule: " + layout.LabelRule + ".",
		Example: `  sessionfs label fix-login team=web stage=review
  sessionfs label fix-login stage-
  sessionfs label fix-login`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: a.completeLabels,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runLabel(cmd.OutOrStdout(), args[0], args[1:])
		},
	}
}

// runLabel applies edits (KEY=VALUE, KEY-) to session arg's labels and prints the labels it has then; with no
// edits, it prints them one a line.
func (a *app) runLabel(w io.Writer, arg string, edits []string) error {
	set, unset, err := parseLabelEdits(edits)
	if err != nil {
		return err
	}
	id, err := a.exactID(arg)
	if err != nil {
		return err
	}
	if len(edits) == 0 {
		m, err := a.store.Get(id)
		if err != nil {
			return repairHint(a.store, id, err)
		}
		for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
			fmt.Fprintf(w, "%s=%s\n", k, m.Labels[k])
		}
		return nil
	}
	m, err := a.store.Update(id, func(m *layout.Meta) error { return m.EditLabels(set, unset) })
	if err != nil {
		return err
	}
	fmt.Fprintln(w, strings.TrimSpace(m.ID+" "+labelText(m.Labels))) // no labels left: the id alone, no trailing blank
	return nil
}

// parseLabelEdits reads label's arguments: KEY=VALUE sets, KEY- removes, as kubectl label does.
func parseLabelEdits(args []string) (set map[string]string, unset []string, err error) {
	set = map[string]string{}
	for _, arg := range args {
		if k, ok := strings.CutSuffix(arg, "-"); ok && k != "" && !strings.Contains(k, "=") {
			unset = append(unset, k) // any key may go, one set before the rule included
			continue
		}
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, nil, usageError(fmt.Sprintf("label: %q: want KEY=VALUE to set, KEY- to remove", arg))
		}
		if err := layout.ValidateLabel(k, v); err != nil {
			return nil, nil, usageError(err.Error())
		}
		set[k] = v
	}
	return set, unset, nil
}

package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

func versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Example: `  sessionfs version
  sessionfs version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (version, go, os, arch)")
	return cmd
}

// printVersion prints the build's version; as JSON, with Go's version and the platform.
func printVersion(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, map[string]string{"version": versionString(), "go": runtime.Version(),
			"os": runtime.GOOS, "arch": runtime.GOARCH})
	}
	fmt.Fprintf(w, "sessionfs %s\n", versionString())
	return nil
}

// versionString is the build's version: the Makefile's, else the module's, else "dev".
func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return v
}

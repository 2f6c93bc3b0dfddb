package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The build's version, commit and date, set by the Makefile (-ldflags "-X main.version=... -X main.commit=...
// -X main.date=..."): the version is git describe's of the latest tag (v0.x.y, and -N-g<commit> past it), or
// v0.0.0-dev+<commit> before the first tag; the date is the commit's, or $SOURCE_DATE_EPOCH's (UTC, RFC 3339). A build without them (go build, go install) takes what Go recorded.
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildInfo is what version prints.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the build date",
		Long: `version prints sessionfs's semantic version (v0.x.y, from the latest tag of its repository: a build past the
tag adds -N-g<commit>, one before the first tag is v0.0.0-dev+<commit>; -dirty or .dirty when the work tree had
changes), the commit it was built from, and the date it was built (for go build and go install, the commit's date).`,
		Example: `  sessionfs version
  sessionfs version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), currentBuild(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (version, commit, date, go, os, arch)")
	return cmd
}

// printVersion prints b: one field a line, or as JSON.
func printVersion(w io.Writer, b buildInfo, asJSON bool) error {
	if asJSON {
		return printJSON(w, b)
	}
	_, err := fmt.Fprintf(w, "sessionfs %s\ncommit:  %s\nbuilt:   %s\ngo:      %s %s/%s\n", b.Version, b.Commit, b.Date,
		b.Go, b.OS, b.Arch)
	return err
}

// versionString is the build's version, for --version.
func versionString() string {
	return currentBuild().Version
}

// currentBuild is this binary's build: the Makefile's values, else what Go recorded of the module and its VCS.
func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveBuild(version, commit, date, bi)
}

// resolveBuild fills what the linker flags left empty from Go's build information: the module's version (go
// install sessionfs@v0.1.0, or the pseudo-version go build stamps from the VCS), else v0.0.0-dev+<commit>; the
// VCS's revision and commit time.
func resolveBuild(v, c, d string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: v, Commit: c, Date: d, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	dirty := ""
	if bi != nil {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = ".dirty"
			}
		}
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
	}
	if b.Version == "" {
		short := b.Commit
		if len(short) > 12 {
			short = short[:12]
		}
		if short == "" {
			short = "unknown"
		}
		b.Version = "v0.0.0-dev+" + short + dirty
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// semver is a semantic version as sessionfs prints it: v, then major.minor.patch, then a pre-release and build.
var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func TestResolveBuild(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1f81c22f0a8e4b1c9d2e3f4a5b6c7d8e9f0a1b2c"},
		{Key: "vcs.time", Value: "2026-11-25T22:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name          string
		v, c, d       string
		bi            *debug.BuildInfo
		version, cmt  string
		date          string
		semverVersion bool
	}{
		{"the Makefile's, past a tag", "v0.1.0-3-g1f81c22", "1f81c22f0a8e", "2026-11-25T23:00:00Z", vcs,
			"v0.1.0-3-g1f81c22", "1f81c22f0a8e", "2026-11-25T23:00:00Z", true},
		{"the Makefile's, before the first tag", "v0.0.0-dev+1f81c22f0a8e.dirty", "1f81c22f0a8e", "2026-11-25T23:00:00Z", nil,
			"v0.0.0-dev+1f81c22f0a8e.dirty", "1f81c22f0a8e", "2026-11-25T23:00:00Z", true},
		{"go build in a work tree: Go's VCS stamps", "", "", "", vcs,
			"v0.0.0-dev+1f81c22f0a8e.dirty", "1f81c22f0a8e4b1c9d2e3f4a5b6c7d8e9f0a1b2c", "2026-11-25T22:00:00Z", true},
		{"go install at a tag", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
			"v0.1.0", "unknown", "unknown", true},
		{"nothing known", "", "", "", nil, "v0.0.0-dev+unknown", "unknown", "unknown", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := resolveBuild(tt.v, tt.c, tt.d, tt.bi)
			assert.Equal(t, tt.version, b.Version)
			assert.Equal(t, tt.cmt, b.Commit)
			assert.Equal(t, tt.date, b.Date)
			assert.Regexp(t, semver, b.Version, "a semantic version")
		})
	}
}

func TestPrintVersion(t *testing.T) {
	b := buildInfo{Version: "v0.1.0", Commit: "1f81c22f0a8e", Date: "2026-11-25T23:00:00Z", Go: "go1.26.8", OS: "linux", Arch: "amd64"}
	var out bytes.Buffer
	require.NoError(t, printVersion(&out, b, false))
	assert.Equal(t, "sessionfs v0.1.0\ncommit:  1f81c22f0a8e\nbuilt:   2026-11-25T23:00:00Z\ngo:      go1.26.8 linux/amd64\n", out.String())

	out.Reset()
	require.NoError(t, printVersion(&out, b, true))
	var got map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, map[string]string{"version": "v0.1.0", "commit": "1f81c22f0a8e", "date": "2026-11-25T23:00:00Z",
		"go": "go1.26.8", "os": "linux", "arch": "amd64"}, got)
}

// The binary under test was built by go test: its version is still a semantic one.
func TestCurrentBuildIsSemver(t *testing.T) {
	assert.Regexp(t, semver, currentBuild().Version)
	assert.Equal(t, currentBuild().Version, newRootCmd().Version, "--version prints the same")
}

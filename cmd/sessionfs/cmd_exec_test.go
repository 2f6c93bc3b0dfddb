//go:build !nobackends

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

func TestParseEnv(t *testing.T) {
	t.Setenv("SFS_FROM_SHELL", "shell value")
	got, err := parseEnv([]string{"A=1", "B=", "SFS_FROM_SHELL", "SFS_NOT_SET_ANYWHERE", "C=x=y"})
	require.NoError(t, err)
	assert.Equal(t, []string{"A=1", "B=", "SFS_FROM_SHELL=shell value", "C=x=y"}, got, "KEY alone passes the shell's value, or nothing")
	for _, bad := range []string{"", "=x", "A B=1", "A\x00=1", "A=\x00"} {
		_, err := parseEnv([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

// -w is relative to the workspace (it was relative to the session's root), for exec and run alike.
func TestSessionWorkdir(t *testing.T) {
	for in, want := range map[string]string{"": "", "api": "workspace/api", "api/../web": "workspace/web", "..": ".",
		"../app": "app", "/session": ".", "/session/workspace/x": "workspace/x", "/session/": "."} {
		got, err := sessionWorkdir(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"/etc", "/sessionx", "/", "../..", "../../x", "x/../../.."} {
		_, err := sessionWorkdir(bad)
		assert.ErrorContains(t, err, "outside the session", bad)
	}
}

func TestReadEnvFile(t *testing.T) {
	t.Setenv("SFS_FROM_SHELL", "shell value")
	f := filepath.Join(t.TempDir(), "env")
	require.NoError(t, os.WriteFile(f, []byte("\uFEFFA=1\n# a comment\n\n  B=two words # kept\r\nSFS_FROM_SHELL\nSFS_UNSET_HERE\nC='q'\n"), 0o600))
	got, err := commandEnv([]string{f}, []string{"A=2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"A=1", "B=two words # kept", "SFS_FROM_SHELL=shell value", "C='q'", "A=2"}, got,
		"docker's format: values as written, KEY alone passes the shell's value; -e comes last and wins")
	for _, bad := range []string{"=x\n", "A B=1\n", "KEY \n"} {
		require.NoError(t, os.WriteFile(f, []byte("OK=1\n"+bad), 0o600))
		_, err := commandEnv([]string{f}, nil)
		assert.ErrorContains(t, err, "line 2", "%q", bad)
	}
	_, err = commandEnv([]string{filepath.Join(t.TempDir(), "missing")}, nil)
	assert.ErrorContains(t, err, "--env-file")
}

// exec's and run's command is what follows the id, with or without "--"; sessionfs's flags right after the id
// still count up to "--" or the command.
func TestCommandArgs(t *testing.T) {
	a := &app{}
	for _, c := range []struct {
		args    []string
		id      string
		argv    []string
		workdir string
	}{
		{[]string{"s1", "ls", "-la"}, "s1", []string{"ls", "-la"}, ""},
		{[]string{"s1", "--", "ls", "-w", "x"}, "s1", []string{"ls", "-w", "x"}, ""},
		{[]string{"-w", "api", "s1", "make", "-w"}, "s1", []string{"make", "-w"}, "api"},
		{[]string{"s1", "-w", "api", "--", "make"}, "s1", []string{"make"}, "api"},
		{[]string{"s1", "-w", "api", "make", "-k"}, "s1", []string{"make", "-k"}, "api"},
		{[]string{"-w", "api", "--", "s1", "make"}, "s1", []string{"make"}, "api"},
		{[]string{"s1"}, "s1", []string{}, ""},
		{[]string{"s1", "--"}, "s1", []string{}, ""},
	} {
		for _, cmd := range []*cobra.Command{a.execCmd(), a.runCmd()} {
			require.NoError(t, cmd.ParseFlags(c.args), "%v", c.args)
			id, argv, err := commandArgs(cmd, cmd.Flags().Args())
			require.NoError(t, err, "%v", c.args)
			assert.Equal(t, c.id, id, "%v", c.args)
			assert.Equal(t, c.argv, argv, "%v", c.args)
			w, _ := cmd.Flags().GetString("workdir")
			assert.Equal(t, c.workdir, w, "%v", c.args)
		}
	}
	cmd := a.execCmd()
	require.NoError(t, cmd.ParseFlags([]string{"s1", "--nope", "--", "x"}))
	_, _, err := commandArgs(cmd, cmd.Flags().Args())
	assert.ErrorContains(t, err, "unknown flag: --nope")
}

// An unknown backend is named as such, whatever other flag comes with it (it was "--image applies to docker or
// modal").
func TestCheckBackendFlagsUnknownBackend(t *testing.T) {
	cmd := (&app{}).runCmd()
	require.NoError(t, cmd.ParseFlags([]string{"--backend", "dockr", "--image", "x"}))
	err := checkBackendFlags(cmd, "dockr")
	assert.ErrorContains(t, err, `unknown backend "dockr" (want local, docker or modal)`)
	assert.NotContains(t, err.Error(), "applies to")
}

// The not-mounted warning says "only from the cwd it began in" only of what it is true of.
func TestCwdCaveat(t *testing.T) {
	assert.Contains(t, cwdCaveat(""), "Claude Code before 2.1.234")
	assert.Contains(t, cwdCaveat("claude"), "Claude Code before 2.1.234")
	assert.Contains(t, cwdCaveat("gemini"), "gemini resumes a conversation only from the cwd it began in")
	assert.Empty(t, cwdCaveat("codex"), "codex keeps no cwd-keyed folder")
	assert.Empty(t, cwdCaveat("opencode"))
}

// The conversation a claude run made or continued is the newest transcript it touched, in any projects folder.
func TestNewestTranscript(t *testing.T) {
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Create("s1", layout.CreateOptions{})
	require.NoError(t, err)
	projects := filepath.Join(s.Root, "sessions", "s1", filepath.FromSlash(layout.ProjectsDir))
	start := time.Now()
	write := func(folder, name string, at time.Time) {
		require.NoError(t, os.MkdirAll(filepath.Join(projects, folder), 0o755))
		f := filepath.Join(projects, folder, name)
		require.NoError(t, os.WriteFile(f, []byte("{}\n"), 0o600))
		require.NoError(t, os.Chtimes(f, at, at))
	}
	assert.Empty(t, newestTranscript(s, "s1", start))
	write("-session-workspace", "11111111-1111-4111-8111-111111111111.jsonl", start.Add(-time.Hour))
	assert.Empty(t, newestTranscript(s, "s1", start), "touched before the run")
	write("-session-workspace", "22222222-2222-4222-8222-222222222222.jsonl", start.Add(time.Second))
	write("-tmp-x", "33333333-3333-4333-8333-333333333333.jsonl", start.Add(2*time.Second))
	write("-tmp-x", "44444444-4444-4444-8444-444444444444.jsonl.bak", start.Add(3*time.Second))
	assert.Equal(t, "33333333-3333-4333-8333-333333333333", newestTranscript(s, "s1", start))
}

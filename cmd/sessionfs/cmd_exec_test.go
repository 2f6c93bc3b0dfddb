package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestSessionWorkdir(t *testing.T) {
	for in, want := range map[string]string{"": "", "workspace/api": "workspace/api", "/session": ".", "/session/workspace/x": "workspace/x", "/session/": "."} {
		got, err := sessionWorkdir(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"/etc", "/sessionx", "/"} {
		_, err := sessionWorkdir(bad)
		assert.ErrorContains(t, err, "outside the session", bad)
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/ui"
)

func TestResumeSetUpFollowsTheReadme(t *testing.T) {
	data, conf := t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_CONFIG_HOME", conf)
	t.Setenv("SESSIONFS_STORE", "")
	var o ui.Options
	resumeSetUp(&o, filepath.Join(data, "sessionfs"))
	assert.NotContains(t, o.Command, "--store", "the default store goes unnamed")
	assert.Equal(t, "--image sessionfs-agent -e ANTHROPIC_API_KEY", o.Docker, "the README's image, with the key")
	assert.False(t, o.Modal, "no Modal image set up: no Modal command")

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "config.toml"), []byte("[docker]\nimage = \"mine\"\n[modal]\nimage = \"node:22\"\n"), 0o644))
	resumeSetUp(&o, other)
	assert.Contains(t, o.Command, " --store "+other)
	assert.Equal(t, "-e ANTHROPIC_API_KEY", o.Docker, "config.toml's image needs no --image")
	assert.True(t, o.Modal)
}

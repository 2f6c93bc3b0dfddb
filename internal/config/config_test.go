package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, file, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
}

func TestLoadStoreOverUser(t *testing.T) {
	home, store := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	c, err := Load(store)
	require.NoError(t, err, "no file sets nothing")
	assert.Equal(t, Config{}, c)

	write(t, filepath.Join(home, "sessionfs", Name), "# mine\n[docker]\nimage = \"mine\"\n[modal]\nimage = \"node:22\"\n")
	c, err = Load(store)
	require.NoError(t, err)
	assert.Equal(t, "mine", c.Docker.Image)

	write(t, StoreFile(store), "[docker]\nimage = \"the-store's\"\n")
	c, err = Load(store)
	require.NoError(t, err)
	assert.Equal(t, "the-store's", c.Docker.Image, "the store's wins")
	assert.Equal(t, "node:22", c.Modal.Image, "what the store leaves unset stays the user's")
}

func TestLoadRefusesTyposAndJunk(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	store := t.TempDir()
	write(t, StoreFile(store), "[docker]\nimgae = \"x\"\n")
	_, err := Load(store)
	assert.ErrorContains(t, err, "unknown setting")
	assert.ErrorContains(t, err, StoreFile(store))

	write(t, StoreFile(store), "[docker\n")
	_, err = Load(store)
	assert.ErrorContains(t, err, StoreFile(store))

	require.NoError(t, os.Remove(StoreFile(store)))
	require.NoError(t, os.Mkdir(StoreFile(store), 0o755))
	_, err = Load(store)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestDockerUser(t *testing.T) {
	home, store := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	write(t, filepath.Join(home, "sessionfs", Name), "[docker]\nuser = \"1000\"\n")
	write(t, StoreFile(store), "[docker]\nimage = \"sessionfs-agent\"\n")
	c, err := Load(store)
	require.NoError(t, err)
	assert.Equal(t, "1000", c.Docker.User)
	assert.Equal(t, "sessionfs-agent", c.Docker.Image)

	write(t, StoreFile(store), "[modal]\nuser = \"1000\"\n")
	_, err = Load(store)
	require.Error(t, err, "a sandbox has no --user")
	assert.Contains(t, err.Error(), "[docker] image and user")
}

func TestSyncRemote(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if err := os.WriteFile(StoreFile(root), []byte("[sync]\nremote = \"build:\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(root)
	if err != nil || c.Sync.Remote != "build:" {
		t.Fatalf("Load: %+v, %v", c, err)
	}
}

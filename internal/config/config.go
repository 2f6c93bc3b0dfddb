// Package config reads sessionfs's settings files: the user's ($XDG_CONFIG_HOME/sessionfs/config.toml, by
// default ~/.config/sessionfs/config.toml) and a store's (<store>/config.toml), which wins where both set a
// value: a store shared by many hosts says which image its sessions need. A missing file sets nothing; an
// unknown key is an error, so a typo is not silently ignored.
//
//	[docker]
//	image = "sessionfs-agent"   # run --backend docker's (and resume's) image when --image is not given
//	user = "1000"               # and its --user when none is given (default: the image's, else the session's owner)
//	[modal]
//	image = "node:22"           # run --backend modal's
//	[sync]
//	remote = "build:"           # sync's remote for a session that remembers none (ssh, s3:// or modal)
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// Name is a settings file's name, in the user's folder and in a store.
const Name = "config.toml"

// Config is the settings sessionfs reads.
type Config struct {
	Docker Docker  `toml:"docker"`
	Modal  Backend `toml:"modal"`
	Sync   Sync    `toml:"sync"`
}

// Sync is sync's settings.
type Sync struct {
	Remote string `toml:"remote"` // the remote of a session that remembers none
}

// Backend is one backend's settings.
type Backend struct {
	Image string `toml:"image"` // the default --image
}

// Docker is the docker backend's settings.
type Docker struct {
	Backend
	User string `toml:"user"` // the default --user
}

// maxSize bounds a settings file: a few lines, never a data file.
const maxSize = 1 << 20

// UserFile is the user's settings file: $XDG_CONFIG_HOME/sessionfs/config.toml, else ~/.config/sessionfs/config.toml.
// "" when neither is known.
func UserFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sessionfs", Name)
}

// StoreFile is the settings file of the store at root.
func StoreFile(root string) string { return filepath.Join(root, Name) }

// Load reads the user's settings, then the store's at storeRoot ("" for none) over them.
func Load(storeRoot string) (Config, error) {
	var c Config
	files := []string{UserFile()}
	if storeRoot != "" {
		files = append(files, StoreFile(storeRoot))
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		if err := c.read(f); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// read sets what file sets over c; a missing file sets nothing.
func (c *Config) read(file string) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", file)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(b) > maxSize {
		return fmt.Errorf("%s: larger than %d bytes", file, maxSize)
	}
	var over Config
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&over); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return fmt.Errorf("%s: unknown setting (known: [docker] image and user, [modal] image, [sync] remote):\n%s", file, strict.String())
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	c.Docker.merge(over.Docker)
	c.Modal.merge(over.Modal)
	if over.Sync.Remote != "" {
		c.Sync.Remote = over.Sync.Remote
	}
	return nil
}

func (d *Docker) merge(over Docker) {
	d.Backend.merge(over.Backend)
	if over.User != "" {
		d.User = over.User
	}
}

func (b *Backend) merge(over Backend) {
	if over.Image != "" {
		b.Image = over.Image
	}
}

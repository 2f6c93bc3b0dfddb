// Package modal syncs a session into a Modal Volume (one v2 Volume per session) and back, through Modal's Go SDK
// and its generated control-plane client for the Volume file RPCs the SDK does not wrap.
package modal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"
)

// Config is how to reach Modal, read the Modal way: MODAL_TOKEN_ID, MODAL_TOKEN_SECRET, MODAL_SERVER_URL and
// MODAL_ENVIRONMENT override the profile of ~/.modal.toml (MODAL_PROFILE, else the active one).
type Config struct {
	ServerURL   string
	TokenID     string
	TokenSecret string
	Environment string
}

// ErrNoCredentials: neither the environment nor ~/.modal.toml has a token.
var ErrNoCredentials = errors.New("no Modal credentials: run `modal token new`, or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET")

type profile struct {
	TokenID     string `toml:"token_id"`
	TokenSecret string `toml:"token_secret"`
	ServerURL   string `toml:"server_url"`
	Environment string `toml:"environment"`
	Active      bool   `toml:"active"`
}

// LoadConfig reads the configuration as Modal's own clients do.
func LoadConfig() (Config, error) {
	var p profile
	path := os.Getenv("MODAL_CONFIG_PATH")
	if path == "" {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, ".modal.toml")
		}
	}
	if b, err := os.ReadFile(path); err == nil {
		var profiles map[string]profile
		if err := toml.Unmarshal(b, &profiles); err != nil {
			return Config{}, fmt.Errorf("read %s: %w", path, err)
		}
		name := os.Getenv("MODAL_PROFILE")
		for n, candidate := range profiles {
			if (name == "" && candidate.Active) || n == name {
				p = candidate
			}
		}
	}
	cfg := Config{
		ServerURL:   first(os.Getenv("MODAL_SERVER_URL"), p.ServerURL, "https://api.modal.com:443"),
		TokenID:     first(os.Getenv("MODAL_TOKEN_ID"), p.TokenID),
		TokenSecret: first(os.Getenv("MODAL_TOKEN_SECRET"), p.TokenSecret),
		Environment: first(os.Getenv("MODAL_ENVIRONMENT"), p.Environment),
	}
	if cfg.TokenID == "" || cfg.TokenSecret == "" {
		return cfg, ErrNoCredentials
	}
	return cfg, nil
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

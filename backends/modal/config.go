// Package modal syncs a session into a Modal Volume (one v2 Volume per session) and back, through Modal's Go SDK
// and, for the Volume file RPCs the SDK does not wrap, the generated client on the SDK's own connection.
package modal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	modalsdk "github.com/modal-labs/modal-client/go"
	"github.com/pelletier/go-toml/v2"
)

// Config is how to reach Modal, read as the Go SDK reads it (config.go of modal-client/go): MODAL_TOKEN_ID,
// MODAL_TOKEN_SECRET, MODAL_OAUTH_*, MODAL_SERVER_URL and MODAL_ENVIRONMENT override the profile of ~/.modal.toml
// (MODAL_CONFIG_PATH; MODAL_PROFILE, else the active one).
type Config struct {
	ServerURL   string
	TokenID     string
	TokenSecret string
	// OAuth is set when the profile (or the environment) holds OAuth credentials instead of a token.
	OAuth       *modalsdk.OAuthCredentialsParams
	Environment string
	// SandboxV2Chosen: the profile says sandbox_v2 (either way); the user's choice is left to the SDK.
	SandboxV2Chosen bool
}

// ErrNoCredentials: neither the environment nor ~/.modal.toml has a token.
var ErrNoCredentials = errors.New("no Modal credentials: run `modal token new`, or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET")

type profile struct {
	TokenID           string `toml:"token_id"`
	TokenSecret       string `toml:"token_secret"`
	OAuthRefreshToken string `toml:"oauth_refresh_token"`
	OAuthClientID     string `toml:"oauth_client_id"`
	OAuthClientSecret string `toml:"oauth_client_secret"`
	OAuthJWTKey       string `toml:"oauth_jwt_key"`
	ServerURL         string `toml:"server_url"`
	Environment       string `toml:"environment"`
	SandboxV2         *bool  `toml:"sandbox_v2"`
	Active            bool   `toml:"active"`
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
		ServerURL:       first(os.Getenv("MODAL_SERVER_URL"), p.ServerURL, "https://api.modal.com:443"),
		TokenID:         first(os.Getenv("MODAL_TOKEN_ID"), p.TokenID),
		TokenSecret:     first(os.Getenv("MODAL_TOKEN_SECRET"), p.TokenSecret),
		Environment:     first(os.Getenv("MODAL_ENVIRONMENT"), p.Environment),
		SandboxV2Chosen: p.SandboxV2 != nil,
	}
	oauth := modalsdk.OAuthCredentialsParams{
		RefreshToken: first(os.Getenv("MODAL_OAUTH_REFRESH_TOKEN"), p.OAuthRefreshToken),
		ClientID:     first(os.Getenv("MODAL_OAUTH_CLIENT_ID"), p.OAuthClientID),
	}
	if secret, key := os.Getenv("MODAL_OAUTH_CLIENT_SECRET"), os.Getenv("MODAL_OAUTH_JWT_KEY"); secret != "" || key != "" {
		oauth.ClientSecret, oauth.JWTKey = secret, key
	} else {
		oauth.ClientSecret, oauth.JWTKey = p.OAuthClientSecret, p.OAuthJWTKey
	}
	switch {
	case cfg.TokenID != "" && cfg.TokenSecret != "":
	case oauth.RefreshToken != "" && oauth.ClientID != "" && (oauth.ClientSecret != "" || oauth.JWTKey != ""):
		cfg.OAuth = &oauth
	default:
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

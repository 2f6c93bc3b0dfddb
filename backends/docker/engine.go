package docker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/docker/docker/client"
)

// Rootless reports whether the engine runs rootless: Docker says so among its security options, Podman in
// a field of its own ("Rootless") that the Docker SDK's Info drops, so /info is read raw.
func Rootless(ctx context.Context, cli *client.Client) bool {
	if info, err := cli.Info(ctx); err == nil && slices.Contains(info.SecurityOptions, "name=rootless") {
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/info", nil)
	if err != nil {
		return false
	}
	resp, err := cli.HTTPClient().Do(req) // its transport dials the engine's socket whatever the URL's host
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var podman struct{ Rootless bool }
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&podman) == nil && podman.Rootless
}

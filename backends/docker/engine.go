package docker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/docker/docker/client"
)

// Rootless reports whether the engine runs rootless: Docker says so among its security options, Podman in a
// field of its own ("Rootless") that the Docker SDK's Info drops. /info is read raw, once: Podman takes most of a
// second to answer it, and doctor's budget held three calls of that before (", rootless" went missing).
func Rootless(ctx context.Context, cli *client.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/info", nil)
	if err != nil {
		return false
	}
	resp, err := cli.HTTPClient().Do(req) // its transport dials the engine's socket whatever the URL's host
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var info struct {
		SecurityOptions []string
		Rootless        bool
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info) != nil {
		return false
	}
	return info.Rootless || slices.Contains(info.SecurityOptions, "name=rootless")
}

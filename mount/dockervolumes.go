package mount

import (
	"fmt"
	"os"

	"github.com/sessionfs/sessionfs/dockervolume"
	"github.com/sessionfs/sessionfs/layout"
)

// serveDockerVolumes serves the mount's sessions as Docker volumes from the helper (mount --docker-volumes): the
// helper outlives a killed or upgraded daemon, so the plugin answers on. stop closes its socket.
func serveDockerVolumes(cfg helperConfig) (stop func(), err error) {
	store, err := layout.OpenStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	l, err := dockervolume.Listen(dockervolume.PluginDir, cfg.DockerVolumes)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("the Docker volume plugin %s: %w", cfg.DockerVolumes, err)
	}
	go func() {
		if err := dockervolume.Serve(l, &dockervolume.Driver{Store: store, Mountpoint: cfg.Mountpoint}); err != nil {
			fmt.Fprintf(os.Stderr, "sessionfs: the Docker volume plugin %s stopped: %v\n", cfg.DockerVolumes, err)
		}
	}()
	return func() { l.Close(); store.Close() }, nil
}

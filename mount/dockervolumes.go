package mount

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/dockervolume"
	"github.com/sessionfs/sessionfs/layout"
)

// serveDockerVolumes serves the mount's sessions as Docker volumes from the helper (mount --docker-volumes): the
// helper outlives a killed or upgraded daemon, so the plugin answers on. stop closes its socket and takes the
// stages down.
func serveDockerVolumes(cfg helperConfig) (stop func(), err error) {
	store, err := layout.OpenStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	unclaim, err := dockervolume.Claim(cfg.DockerVolumes) // before its socket and stages are touched
	if err != nil {
		store.Close()
		return nil, err
	}
	l, err := dockervolume.Listen(dockervolume.PluginDir, cfg.DockerVolumes)
	if err != nil {
		unclaim()
		store.Close()
		return nil, fmt.Errorf("the Docker volume plugin %s: %w", cfg.DockerVolumes, err)
	}
	d := &dockervolume.Driver{Store: store, Mountpoint: cfg.Mountpoint, Stage: filepath.Join(dockervolume.StageRoot, cfg.DockerVolumes), Scope: "local"}
	if _, shared := SharedStore(cfg.Store); shared {
		d.Scope = "global" // other hosts mount the store: a volume is the same session on each
	}
	if err := d.Sweep(); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: the Docker volume plugin %s: stages left by a helper before: %v\n", cfg.DockerVolumes, err)
	}
	go func() {
		if err := dockervolume.Serve(l, d); err != nil {
			fmt.Fprintf(os.Stderr, "sessionfs: the Docker volume plugin %s stopped: %v\n", cfg.DockerVolumes, err)
		}
	}()
	return func() {
		l.Close()
		if err := d.Sweep(); err != nil { // the containers keep their own binds
			fmt.Fprintf(os.Stderr, "sessionfs: the Docker volume plugin %s: %v\n", cfg.DockerVolumes, err)
		}
		_ = os.Remove(d.Stage) // empty now, unless a stage could not be taken down
		unclaim()
		store.Close()
	}, nil
}

package dockervolume

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// PluginDir is where the engine finds plugins' sockets by name (Docker's plugin discovery).
const PluginDir = "/run/docker/plugins"

// SocketPath is plugin name's socket in dir.
func SocketPath(dir, name string) string { return filepath.Join(dir, name+".sock") }

// maxRequest bounds a call's body: the engine's are a name, a container id and a few options.
const maxRequest = 64 << 10

// contentType is the plugin protocol's.
const contentType = "application/vnd.docker.plugins.v1.2+json"

// Listen makes plugin name's socket in dir, root's alone (0600), in place of one a plugin before left.
func Listen(dir, name string) (net.Listener, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := SocketPath(dir, name)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	old := unix.Umask(0o177) // no moment at which another user could connect
	l, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Handler serves the engine's calls to d.
func Handler(d *Driver) http.Handler {
	mux := http.NewServeMux()
	call := func(path string, fn func(req request) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			var req request
			body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
			if err == nil && len(body) > maxRequest {
				err = fmt.Errorf("a request over %d bytes", maxRequest)
			}
			if err == nil && len(body) > 0 {
				err = json.Unmarshal(body, &req)
			}
			var out any
			if err == nil {
				out, err = fn(req)
			}
			w.Header().Set("Content-Type", contentType)
			if err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				out = errResponse{Err: err.Error()}
			}
			_ = json.NewEncoder(w).Encode(out)
		})
	}
	call("/Plugin.Activate", func(request) (any, error) {
		return map[string][]string{"Implements": {"VolumeDriver"}}, nil
	})
	call("/VolumeDriver.Capabilities", func(request) (any, error) {
		scope := d.Scope
		if scope == "" {
			scope = "local"
		}
		return map[string]map[string]string{"Capabilities": {"Scope": scope}}, nil
	})
	call("/VolumeDriver.Create", func(r request) (any, error) { return errResponse{}, d.Create(r.Name, r.Opts) })
	call("/VolumeDriver.Remove", func(r request) (any, error) { return errResponse{}, d.Remove(r.Name) })
	call("/VolumeDriver.Mount", func(r request) (any, error) {
		p, err := d.Mount(r.Name, r.ID)
		return pathResponse{Mountpoint: p}, err
	})
	call("/VolumeDriver.Unmount", func(r request) (any, error) { return errResponse{}, d.Unmount(r.Name, r.ID) })
	call("/VolumeDriver.Path", func(r request) (any, error) {
		p, err := d.Path(r.Name)
		return pathResponse{Mountpoint: p}, err
	})
	call("/VolumeDriver.Get", func(r request) (any, error) {
		v, err := d.Get(r.Name)
		return map[string]any{"Volume": v, "Err": ""}, err
	})
	call("/VolumeDriver.List", func(request) (any, error) {
		vs, err := d.List()
		return map[string]any{"Volumes": vs, "Err": ""}, err
	})
	return mux
}

// request is any call's body: the fields each call uses.
type request struct {
	Name string
	ID   string
	Opts map[string]string
}

type errResponse struct {
	Err string
}

type pathResponse struct {
	Mountpoint string
	Err        string
}

// Serve answers the engine on l until l is closed.
func Serve(l net.Listener, d *Driver) error {
	srv := &http.Server{Handler: Handler(d), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	err := srv.Serve(l)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

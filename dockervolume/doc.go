// Package dockervolume is a Docker volume plugin whose volumes are sessions: `docker run --mount
// type=volume,volume-driver=sessionfs,src=ID,dst=/session` gives the container session ID's folder in the mount
// (its binds and transcript views with it), made on first use as `sessionfs new` makes one; `docker volume rm`
// moves it to the trash. The engine is never handed a path the session or the daemon answers: Mount lays the
// session by descriptor (bind.LaySession) on a folder only root reaches (stage.go). It speaks Docker's VolumeDriver protocol (JSON over HTTP on a unix socket under
// /run/docker/plugins) with the standard library: nine endpoints did not call for the dormant helper library.
//
// The privileged helper of a root mount serves it (sessionfs mount --docker-volumes): the helper holds the
// mount's connection, so a daemon killed or upgraded keeps the plugin answering, and a volume's container sees
// what a bound container sees.
package dockervolume

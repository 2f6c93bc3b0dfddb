// Package e2e tests sessionfs as people use it: the real binary, a real FUSE mount, the real claude CLI driven
// offline against the apistub Messages API, and (for the Docker backend) a real dockerd.
package e2e

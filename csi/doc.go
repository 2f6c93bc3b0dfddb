// Package csi serves sessions as volumes over the Container Storage Interface, so a Kubernetes or Nomad pod asks
// for "session web at /session" and gets what `sessionfs run --backend docker` gives a container: the session's
// folder from the node's sessionfs mount (every cwd's transcript folder a view of the one), its heavy folders
// bound natively from the store, nothing outside the session reachable, and the session's run lease for the
// pod's lifetime (one pod at a time across the cluster, on a store every node shares).
package csi

// Package csi serves sessions as volumes over the Container Storage Interface, so a Kubernetes or Nomad pod asks
// for "session web at /session" and gets what `sessionfs run --backend docker` gives a container: the session's
// folder from the node's sessionfs mount (every cwd's transcript folder a view of the one), its heavy folders
// bound natively from the store, nothing outside the session reachable, and the session's run lease for the
// pod's lifetime (one pod at a time across the cluster, on a store every node shares).
//
// Tenancy (tenancy.go): a session belongs to the Kubernetes namespace that made it; an inline volume names and
// makes only its pod's namespace's sessions, a persistent volume's handle is trusted as Kubernetes bound it.
// Targets are beneath the kubelet's folder, and unpublishing detaches only what this plugin published there
// (unpublish.go), known by its record on disk (record.go) or as a clone of the node's mount. The node's mount is
// used if it serves the store, or started by the plugin (mount.go); a volume's session is made by session.Create.
package csi

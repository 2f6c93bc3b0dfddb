// Package csi serves sessions as volumes over the Container Storage Interface, so a Kubernetes or Nomad pod asks
// for "session web at /session" and gets what `sessionfs run --backend docker` gives a container: the session's
// folder from the node's sessionfs mount (every cwd's transcript folder a view of the one), its heavy folders
// bound natively from the store, nothing outside the session reachable, and the session's run lease for the
// pod's lifetime (one pod at a time across the cluster, on a store every node shares).
//
// The files: driver.go (the Driver, its gRPC server, identity), controller.go (a volume is a session: CreateVolume
// makes it with session.Create, DeleteVolume trashes it), node.go (NodePublishVolume and NodeUnpublishVolume, in
// the order below), attributes.go (what a volume asks for: its attributes and access modes), tenancy.go (whose
// session it is), targets.go (targets beneath the kubelet's folder, what is mounted there, the node's mount, and
// whether a mount is the plugin's own), lease.go (the run lease a pod holds), record.go (what was published, kept
// on disk across restarts), publish.go (the session laid at the target by package bind), unpublish.go (only what
// the plugin published detached), mount.go (the node's mount used if it serves the store, else started),
// handover.go (a DaemonSet update: the node's mount taken over from the plugin's pod before, and left to the next).
//
// A publish: the target checked (targets.go), the capability and attributes read (attributes.go), the session
// named, made if missing and allowed, and checked to be the pod's namespace's (tenancy.go), a publication already
// there found (targets.go), the run lease taken (lease.go), the publication recorded (record.go), then the session
// bound at the target (publish.go); what fails part-way is undone (unpublish.go).
//
// Tenancy: a session belongs to the Kubernetes namespace that made it (the store's record, where no session
// writes); an inline volume names and makes only its
// pod's namespace's sessions, a persistent volume's handle is trusted as Kubernetes bound it.
package csi

package csi

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// Tenancy. A session belongs to the Kubernetes namespace that made it: the store's record of its owner
// (Store.Namespace), never session.json's namespace, which the session's processes can write. An inline volume's
// pod (its namespace given by the kubelet, podInfoOnMount) makes sessions into its namespace and may name only its
// namespace's; a session of another namespace, or of none (made outside Kubernetes, or before owners were
// recorded), is PERMISSION_DENIED before its lease is touched. A persistent volume is authorized by Kubernetes (a
// PV bound to the pod's claim), so its handle is trusted whatever the session's namespace.

// sessionFor is the session a publish of volumeID with attributes a lays at its target: named (sessionOf), made if
// it is missing and a allows it (create), and the pod's if an inline volume names it (checkOwner). It runs before
// the lease: a pod refused must not hold another namespace's session from its owners.
func (d *Driver) sessionFor(volumeID string, a attributes) (string, error) {
	id, err := sessionOf(volumeID, a)
	if err != nil {
		return "", err
	}
	if err := layout.ValidateID(id); err != nil {
		return "", status.Errorf(codes.InvalidArgument, "session: %v", err)
	}
	if !d.Store.Exists(id) {
		if !a.create {
			return "", status.Errorf(codes.NotFound, "no session %s (and create=false)", id)
		}
		if err := d.create(id, a, 0); err != nil {
			return "", err
		}
	}
	if a.ephemeral {
		if err := d.checkOwner(id, a.namespace); err != nil {
			return "", err
		}
	}
	return id, nil
}

// sessionOf is the session a publish names: an inline volume's attribute, a persistent volume's handle.
func sessionOf(volumeID string, a attributes) (string, error) {
	switch {
	case a.ephemeral && a.session == "":
		return "", status.Error(codes.InvalidArgument, "an inline volume names its session: volumeAttributes: {session: ID}")
	case a.ephemeral && a.namespace == "":
		return "", status.Error(codes.FailedPrecondition, "an inline volume comes without its pod's namespace: set podInfoOnMount: true on the CSIDriver "+Name+" (contrib/kubernetes/csidriver.yaml)")
	case a.ephemeral:
		return a.session, nil
	case a.session != "" && a.session != volumeID:
		// Only a pod's own attributes name another session than the handle: an inline volume the kubelet did not
		// mark, so its namespace is unknown.
		return "", status.Errorf(codes.InvalidArgument, "volume %s names session %s: a persistent volume's session is its handle (an inline volume needs podInfoOnMount: true on the CSIDriver %s)", volumeID, a.session, Name)
	}
	return volumeID, nil
}

// checkOwner lets an inline volume of namespace ns have session id only if ns owns it: the store's record of its
// owner (layout.Store.Namespace), never session.json's namespace, which the session's own processes can rewrite
// (a pod would write another namespace there and plant hooks for its pods). A session with no record (made
// outside Kubernetes, or before owners were recorded) is refused.
func (d *Driver) checkOwner(id, ns string) error {
	owner, err := d.Store.Namespace(id)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "session %s: %v", id, err)
	}
	switch {
	case owner == "":
		return status.Errorf(codes.PermissionDenied, "session %s belongs to no namespace (made outside Kubernetes, or before this plugin recorded owners): an inline volume names only its namespace's sessions; give it through a PersistentVolume bound to a claim", id)
	case owner != ns:
		return status.Errorf(codes.PermissionDenied, "session %s is not namespace %s's: an inline volume names only its namespace's sessions (give another's through a PersistentVolume bound to a claim)", id, ns)
	}
	return nil
}

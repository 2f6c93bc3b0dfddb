package csi

import (
	"fmt"
	"strconv"
	"strings"

	spec "github.com/container-storage-interface/spec/lib/go/csi"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// The volume attributes a pod (an inline volume) or a StorageClass (parameters) may give.
const (
	AttrSession = "session" // the session's id (an inline volume's must; a persistent volume's id is its handle)
	AttrCreate  = "create"  // "true": make the session if it does not exist (an inline volume's default), "false": it must
	AttrProfile = "profile" // a profile's name, beneath the plugin's --profiles folder, copied into a new session
	AttrLabels  = "labels"  // labels of a new session: "team=web,env=dev"
	// kubePrefix starts the attributes Kubernetes adds itself (ephemeral, pod name, ...): read, never refused.
	kubePrefix = "csi.storage.k8s.io/"
	// attrEphemeral marks an inline (ephemeral) volume, and attrPodNamespace names its pod's namespace: the kubelet
	// writes both over anything the pod gives when the CSIDriver has podInfoOnMount: true.
	attrEphemeral    = kubePrefix + "ephemeral"
	attrPodNamespace = kubePrefix + "pod.namespace"
	// attrClaimNamespace is a claim's namespace, which csi-provisioner --extra-create-metadata gives CreateVolume.
	attrClaimNamespace = kubePrefix + "pvc/namespace"
)

// attributes are a volume's parsed attributes.
type attributes struct {
	session   string
	create    bool // make the session if missing (an inline volume's default; a persistent volume's is made by CreateVolume)
	profile   string
	labels    map[string]string
	ephemeral bool
	// namespace is the pod's namespace (NodePublishVolume) or the claim's (CreateVolume); "" when not given.
	namespace string
}

// parseAttributes checks every attribute as hostile input: an unknown key, an id or a profile name outside the
// id rule (no "/", no ".."), an ill-formed label, are errors.
func parseAttributes(attrs map[string]string) (attributes, error) {
	a := attributes{}
	createSet := false
	for k, v := range attrs {
		switch {
		case k == AttrSession:
			if err := layout.ValidateID(v); err != nil {
				return a, fmt.Errorf("attribute %s: %w", k, err)
			}
			a.session = v
		case k == AttrCreate:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return a, fmt.Errorf("attribute %s=%q: want true or false", k, v)
			}
			a.create, createSet = b, true
		case k == AttrProfile:
			if err := layout.ValidateID(v); err != nil {
				return a, fmt.Errorf("attribute %s=%q: a profile's name, not a path (profiles are folders beneath the plugin's --profiles)", k, v)
			}
			a.profile = v
		case k == AttrLabels:
			labels, err := parseLabels(v)
			if err != nil {
				return a, fmt.Errorf("attribute %s: %w", k, err)
			}
			a.labels = labels
		case k == attrEphemeral:
			a.ephemeral = v == "true"
		case k == attrPodNamespace || k == attrClaimNamespace:
			if !validNamespace(v) {
				return a, fmt.Errorf("attribute %s=%q: not a Kubernetes namespace's name", k, v)
			}
			a.namespace = v
		case strings.HasPrefix(k, kubePrefix):
		default:
			return a, fmt.Errorf("unknown attribute %q (known: %s, %s, %s, %s)", k, AttrSession, AttrCreate, AttrProfile, AttrLabels)
		}
	}
	if !createSet {
		a.create = a.ephemeral
	}
	return a, nil
}

// parseLabels reads "k=v,k2=v2" by the labels' rule.
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want KEY=VALUE", kv)
		}
		if err := layout.ValidateLabel(k, v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// validNamespace reports whether s is a Kubernetes namespace's name (an RFC 1123 label).
func validNamespace(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// checkCapabilities accepts a mounted folder used by one pod on one node (its lease keeps it to one pod, so
// SINGLE_NODE_MULTI_WRITER is not offered).
func checkCapabilities(caps []*spec.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "a session is a folder: block access is not supported")
		}
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "want mount access")
		}
		switch c.GetAccessMode().GetMode() {
		case spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, spec.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			spec.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER:
		default:
			return status.Errorf(codes.InvalidArgument, "access mode %s: a session runs in one pod at a time (a single-node mode)", c.GetAccessMode().GetMode())
		}
	}
	return nil
}

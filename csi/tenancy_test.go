package csi

import (
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestSessionOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  string
		code  codes.Code
	}{
		{"inline", map[string]string{AttrSession: "web", attrEphemeral: "true", attrPodNamespace: "a"}, "web", codes.OK},
		{"inline, no session", map[string]string{attrEphemeral: "true", attrPodNamespace: "a"}, "", codes.InvalidArgument},
		{"inline, no namespace (no podInfoOnMount)", map[string]string{AttrSession: "web", attrEphemeral: "true"}, "", codes.FailedPrecondition},
		{"persistent", map[string]string{attrEphemeral: "false", attrPodNamespace: "a"}, "vol", codes.OK},
		{"persistent naming its handle", map[string]string{AttrSession: "vol"}, "vol", codes.OK},
		{"unmarked, naming another session", map[string]string{AttrSession: "web"}, "", codes.InvalidArgument},
	} {
		a, err := parseAttributes(c.attrs)
		assert.NoError(t, err, c.name)
		got, err := sessionOf("vol", a)
		assert.Equal(t, c.code, status.Code(err), "%s: %v", c.name, err)
		assert.Equal(t, c.want, got, c.name)
	}
	for _, ns := range []string{"A", "-a", "a-", "a/b", "a.b", "", string(make([]byte, 64))} {
		_, err := parseAttributes(map[string]string{attrPodNamespace: ns})
		assert.Error(t, err, "namespace %q", ns)
	}
}

func TestFits(t *testing.T) {
	r := func(req, lim int64) *spec.CapacityRange {
		return &spec.CapacityRange{RequiredBytes: req, LimitBytes: lim}
	}
	assert.True(t, fits(0, r(1<<30, 1<<30)), "a session made without a capacity fits any")
	assert.True(t, fits(1<<20, r(1<<20, 1<<20)))
	assert.True(t, fits(1<<20, nil))
	assert.False(t, fits(1<<20, r(2<<20, 2<<20)), "smaller than required")
	assert.False(t, fits(2<<20, r(0, 1<<20)), "over the limit")
}

func TestBeneathKubelet(t *testing.T) {
	d := &Driver{KubeletRoot: "/var/lib/kubelet/"}
	for target, ok := range map[string]bool{
		"/var/lib/kubelet/pods/u/volumes/v/mount": true,
		"/var/lib/kubelet":                        false,
		"/var/lib/kubelet-other/x":                false,
		"/":                                       false,
		"/var/lib":                                false,
		"relative/path":                           false,
	} {
		_, err := d.beneathKubelet(target)
		assert.Equal(t, ok, err == nil, "%s: %v", target, err)
	}
	_, err := (&Driver{}).beneathKubelet("/var/lib/kubelet/pods/x")
	assert.NoError(t, err, "the default root")
}

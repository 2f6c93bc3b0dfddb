package csi

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sessionfs/sessionfs/layout"
)

// holder is this node's plugin, as a refused lease names it.
func (d *Driver) holder() layout.Holder {
	h := layout.ThisProcess()
	if d.NodeID != "" {
		h.Host = d.NodeID
	}
	return h
}

// leaseError says who holds a session.
func leaseError(err error) error {
	var re *layout.RunningError
	if errors.As(err, &re) {
		return status.Error(codes.FailedPrecondition, re.Error())
	}
	return status.Errorf(codes.Internal, "lease: %v", err)
}

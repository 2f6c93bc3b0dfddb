// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

// Takeover patch (see ../TAKEOVER.md): a request the kernel resends to a server that took the connection over may
// be the one that killed the server before (a file that makes the file system run out of memory, or crash). The
// guard is told of each resent request before the file system sees it, and may answer it with an error instead:
// the caller that made it gets the error, the mount serves on, and the next server is not killed in turn.

// ResendGuard is what MountOptions.ResendGuard takes. Admit is called, once the request passed the RequestGate,
// with each resent request's unique id (FUSE_UNIQUE_RESEND cleared) and opcode: a status other than OK answers it
// without the file system. Done is called once the answer of a request admitted is written.
type ResendGuard interface {
	Admit(unique uint64, opcode uint32) Status
	Done(unique uint64)
}

// uniqueResend is FUSE_UNIQUE_RESEND: the kernel's mark on a request it sends again (Linux 6.9).
const uniqueResend = 1 << 63

// OpcodeName is the name of a request's opcode, as the debug log shows it ("LOOKUP", "READ").
func OpcodeName(op uint32) string { return operationName(op) }

// guardResent asks the guard about a resent request that gets an answer: Admit's error status is the request's, and
// done (when not nil) is to be called once its answer is written.
func (ms *Server) guardResent(h *operationHandler, req *request) (done func()) {
	g := ms.opts.ResendGuard
	in := req.inHeader()
	if g == nil || h == nil || h.SuppressReply || in.Opcode == _OP_INTERRUPT || in.Unique&uniqueResend == 0 || !req.status.Ok() {
		return nil
	}
	unique := in.Unique &^ uniqueResend
	if st := g.Admit(unique, in.Opcode); !st.Ok() {
		req.status = st
		return nil
	}
	return func() { g.Done(unique) }
}

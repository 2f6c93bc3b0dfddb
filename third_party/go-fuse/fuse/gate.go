// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

// Takeover patch (see ../TAKEOVER.md): a server that hands its connection over stops answering at one instant.
// The requests it is answering finish (answer written), and those it reads after wait unanswered for its exit, so
// that the kernel resends them to the server that takes over (Server.NotifyResend). One gate around every request
// does that; wrapping each RawFileSystem method would miss the answer's write.

// RequestGate is what MountOptions.RequestGate takes: Enter before a request reaches the file system (it may
// block, for good once the server hands over), Leave once its answer is written.
type RequestGate interface {
	Enter()
	Leave()
}

// gates says whether a request passes the gate: every one the kernel waits an answer for, bar INTERRUPT (it only
// cancels another). FORGETs have no answer and are never resent: they go through, so that the counts the next
// server reads are the kernel's.
func (ms *Server) gates(h *operationHandler, opcode uint32) bool {
	return ms.opts.RequestGate != nil && h != nil && !h.SuppressReply && opcode != _OP_INTERRUPT
}

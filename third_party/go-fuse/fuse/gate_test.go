// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

import "testing"

type countingGate struct{ entered int }

func (g *countingGate) Enter() { g.entered++ }
func (g *countingGate) Leave() {}

// Every request the kernel waits an answer for passes the gate; FORGETs (the counts a next server reads) and
// INTERRUPT do not, nor does anything without a gate.
func TestGatesRequestsThatGetAnAnswer(t *testing.T) {
	ms := &Server{opts: &MountOptions{RequestGate: &countingGate{}}}
	for _, op := range []uint32{_OP_LOOKUP, _OP_GETATTR, _OP_WRITE, _OP_RELEASE, _OP_SETLKW, _OP_RENAME2} {
		if !ms.gates(getHandler(op), op) {
			t.Errorf("%s passes no gate", operationName(op))
		}
	}
	for _, op := range []uint32{_OP_FORGET, _OP_BATCH_FORGET, _OP_INTERRUPT, _OP_NOTIFY_REPLY} {
		if ms.gates(getHandler(op), op) {
			t.Errorf("%s waits at the gate", operationName(op))
		}
	}
	if (&Server{opts: &MountOptions{}}).gates(getHandler(_OP_LOOKUP), _OP_LOOKUP) {
		t.Error("a server without a gate gates")
	}
}

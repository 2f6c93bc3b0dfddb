// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fs

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Takeover patch (see ../TAKEOVER.md): a file system that keeps its POSIX lock owners' state outside the server
// (so that their locks outlive it) needs the kernel's file handle a lock request came by, which the kernel will
// RELEASE: the server after this one knows the handle, not this server's FileHandle.

type lockHandleKey struct{}

// lockContext is the context of a lock request that came by file handle fh.
func lockContext(cancel <-chan struct{}, input *fuse.LkIn) context.Context {
	return context.WithValue(&fuse.Context{Caller: input.Caller, Cancel: cancel}, lockHandleKey{}, input.Fh)
}

// LockHandle is the kernel's file handle a lock request (Setlk, Setlkw, Getlk) came by.
func LockHandle(ctx context.Context) (uint64, bool) {
	fh, ok := ctx.Value(lockHandleKey{}).(uint64)
	return fh, ok
}

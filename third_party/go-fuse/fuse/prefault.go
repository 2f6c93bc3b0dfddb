// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

// Takeover patch (see ../TAKEOVER.md): a request read by a server that is being killed must be left for the
// server that takes over, not failed. The kernel copies a request into the reader's buffer by pinning its pages
// (iov_iter_get_pages): the fast path pins pages that are mapped and writable, the slow path faults them in and
// gives up when the thread has a fatal signal pending. A reader that took a request off the queue at the instant
// its process exits (kill -9, or a hand-over's exit) then fails the copy, and the kernel ends the request with
// EIO (fs/fuse/dev.c, fuse_dev_do_read) instead of keeping it for FUSE_NOTIFY_RESEND. A fresh buffer's pages are
// not mapped until written (the Go heap hands out untouched pages): writing one byte a page before each read keeps
// the copy on the fast path, which has no signal check.

// prefault writes to each page of buf, so that every one is mapped writable when the kernel copies into it.
func prefault(buf []byte) {
	for i := 0; i < len(buf); i += pageSize {
		buf[i] = 0
	}
	if n := len(buf); n > 0 {
		buf[n-1] = 0
	}
}

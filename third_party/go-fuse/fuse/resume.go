// Copyright 2026 the Go-FUSE Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package fuse

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Takeover patch (see ../TAKEOVER.md): a server resumes a FUSE connection that another process initialized and
// stopped serving (it died, or handed the connection over). The kernel keeps a connection for as long as any
// descriptor of its /dev/fuse file is open, so a process that keeps a duplicate lets a new server take it on.

// ResumeServer serves fd, a FUSE connection whose INIT was answered already (by another process): init is the
// kernel's INIT request as that process read it (Server.KernelSettings). The server negotiates from it what
// the first server did with the same options, reads no INIT, and serves once Serve is called. fd passes to the
// server. mountPoint only names the mount (for Unmount); it may be "".
func ResumeServer(fs RawFileSystem, fd int, mountPoint string, opts *MountOptions, init InitIn) (*Server, error) {
	ms := newServer(fs, opts)
	var out InitOut
	if st := negotiateInit(&ms.protocolServer, &init, &out); !st.Ok() {
		syscall.Close(fd)
		return nil, fmt.Errorf("resume: the saved INIT: %s", st)
	}
	ms.mountPoint = mountPoint
	if ms.mountPoint == "" {
		ms.mountPoint = fmt.Sprintf("/dev/fd/%d", fd) // no poll hack, no unmount by name
	}
	var err error
	if ms.fuseFD, err = ms.newFuseFD(fd); err != nil {
		return nil, err
	}
	ms.protocolServer.writev = ms.fuseFD.writev
	if ms.kernelSettings.Minor >= 13 {
		ms.setSplice()
	}
	close(ms.ready)
	ms.fileSystem.Init(ms)
	ms.fuseFD.loops.Add(1)
	return ms, nil
}

// NotifyResend asks the kernel to send again every request it sent and had no answer for (FUSE_NOTIFY_RESEND,
// Linux 6.9): those a server that died had read. Resent requests carry the high bit in their unique id; the
// answer echoes it. ENOSYS: the kernel is older, or did not negotiate protocol 7.40.
func (ms *Server) NotifyResend() Status {
	if !ms.kernelSettings.SupportsVersion(7, 40) {
		return ENOSYS
	}
	hdr := OutHeader{Length: uint32(unsafe.Sizeof(OutHeader{})), Status: -int32(NOTIFY_RESEND)} // a notify code goes positive
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&hdr)), unsafe.Sizeof(hdr))
	_, errno := ms.fuseFD.writev([][]byte{buf})
	return Status(errno)
}

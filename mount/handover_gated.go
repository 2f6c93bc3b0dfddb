package mount

// gated passes each request go-fuse answers (fuse.RawFileSystem, fuse/api.go) through the gate (handover_gate.go);
// FORGET, which has no answer, and the server's own calls go straight through.

import "github.com/hanwen/go-fuse/v2/fuse"

func (g *gated) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Lookup(cancel, header, name, out)
}

func (g *gated) GetAttr(cancel <-chan struct{}, input *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.GetAttr(cancel, input, out)
}

func (g *gated) SetAttr(cancel <-chan struct{}, input *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.SetAttr(cancel, input, out)
}

func (g *gated) Mknod(cancel <-chan struct{}, input *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Mknod(cancel, input, name, out)
}

func (g *gated) Mkdir(cancel <-chan struct{}, input *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Mkdir(cancel, input, name, out)
}

func (g *gated) Unlink(cancel <-chan struct{}, header *fuse.InHeader, name string) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Unlink(cancel, header, name)
}

func (g *gated) Rmdir(cancel <-chan struct{}, header *fuse.InHeader, name string) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Rmdir(cancel, header, name)
}

func (g *gated) Rename(cancel <-chan struct{}, input *fuse.RenameIn, oldName string, newName string) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Rename(cancel, input, oldName, newName)
}

func (g *gated) Link(cancel <-chan struct{}, input *fuse.LinkIn, filename string, out *fuse.EntryOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Link(cancel, input, filename, out)
}

func (g *gated) Symlink(cancel <-chan struct{}, header *fuse.InHeader, pointedTo string, linkName string, out *fuse.EntryOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Symlink(cancel, header, pointedTo, linkName, out)
}

func (g *gated) Readlink(cancel <-chan struct{}, header *fuse.InHeader) ([]byte, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Readlink(cancel, header)
}

func (g *gated) Access(cancel <-chan struct{}, input *fuse.AccessIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Access(cancel, input)
}

func (g *gated) GetXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.GetXAttr(cancel, header, attr, dest)
}

func (g *gated) ListXAttr(cancel <-chan struct{}, header *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.ListXAttr(cancel, header, dest)
}

func (g *gated) SetXAttr(cancel <-chan struct{}, input *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.SetXAttr(cancel, input, attr, data)
}

func (g *gated) RemoveXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.RemoveXAttr(cancel, header, attr)
}

func (g *gated) Create(cancel <-chan struct{}, input *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Create(cancel, input, name, out)
}

func (g *gated) Tmpfile(cancel <-chan struct{}, input *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Tmpfile(cancel, input, out)
}

func (g *gated) Open(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Open(cancel, input, out)
}

func (g *gated) Read(cancel <-chan struct{}, input *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Read(cancel, input, buf)
}

func (g *gated) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Lseek(cancel, in, out)
}

func (g *gated) GetLk(cancel <-chan struct{}, input *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.GetLk(cancel, input, out)
}

func (g *gated) SetLk(cancel <-chan struct{}, input *fuse.LkIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.SetLk(cancel, input)
}

func (g *gated) SetLkw(cancel <-chan struct{}, input *fuse.LkIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.SetLkw(cancel, input)
}

func (g *gated) Release(cancel <-chan struct{}, input *fuse.ReleaseIn) {
	g.enter()
	defer g.leave()
	g.RawFileSystem.Release(cancel, input)
}

func (g *gated) Write(cancel <-chan struct{}, input *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Write(cancel, input, data)
}

func (g *gated) Writev(cancel <-chan struct{}, input *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Writev(cancel, input, data)
}

func (g *gated) CopyFileRange(cancel <-chan struct{}, input *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.CopyFileRange(cancel, input)
}

func (g *gated) Ioctl(cancel <-chan struct{}, input *fuse.IoctlIn, inbuf []byte, output *fuse.IoctlOut, outbuf []byte) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Ioctl(cancel, input, inbuf, output, outbuf)
}

func (g *gated) Flush(cancel <-chan struct{}, input *fuse.FlushIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Flush(cancel, input)
}

func (g *gated) Fsync(cancel <-chan struct{}, input *fuse.FsyncIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Fsync(cancel, input)
}

func (g *gated) Fallocate(cancel <-chan struct{}, input *fuse.FallocateIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Fallocate(cancel, input)
}

func (g *gated) OpenDir(cancel <-chan struct{}, input *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.OpenDir(cancel, input, out)
}

func (g *gated) ReadDir(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.ReadDir(cancel, input, out)
}

func (g *gated) ReadDirPlus(cancel <-chan struct{}, input *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.ReadDirPlus(cancel, input, out)
}

func (g *gated) ReleaseDir(input *fuse.ReleaseIn) {
	g.enter()
	defer g.leave()
	g.RawFileSystem.ReleaseDir(input)
}

func (g *gated) FsyncDir(cancel <-chan struct{}, input *fuse.FsyncIn) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.FsyncDir(cancel, input)
}

func (g *gated) StatFs(cancel <-chan struct{}, input *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.StatFs(cancel, input, out)
}

func (g *gated) Statx(cancel <-chan struct{}, input *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	g.enter()
	defer g.leave()
	return g.RawFileSystem.Statx(cancel, input, out)
}

package takeover

import (
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// madeBefore is a file system where "f" was made already (by the daemon before, or by someone else): an O_EXCL
// create of it fails, an unlink of "gone" finds nothing.
type madeBefore struct {
	fuse.RawFileSystem
	opened int
}

func (m *madeBefore) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if in.Flags&syscall.O_EXCL != 0 {
		return fuse.Status(syscall.EEXIST)
	}
	m.opened++
	out.NodeId, out.Fh = 7, 3
	return fuse.OK
}

func (m *madeBefore) Unlink(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return fuse.ENOENT }

// A resent O_EXCL create that finds its file is answered as made (the file opened) only when the daemon before
// noted this very request (its unique id, folder and name) as making it; else EEXIST, as for anyone's file.
func TestResentCreateIsItsOwnOnlyIfNoted(t *testing.T) {
	before, err := nodelog.New()
	require.NoError(t, err)
	defer before.Close()
	after, err := nodelog.Map(before.Fd()) // the next daemon's mapping of the holder's copy
	require.NoError(t, err)
	require.Same(t, after, nodelog.Current(), "the log this process writes last")

	create := func(unique, parent uint64, name string) fuse.Status {
		fs := &madeBefore{RawFileSystem: fuse.NewDefaultRawFileSystem()}
		in := &fuse.CreateIn{InHeader: fuse.InHeader{Unique: unique, NodeId: parent}, Flags: syscall.O_CREAT | syscall.O_EXCL | syscall.O_WRONLY}
		var out fuse.CreateOut
		st := ResendIdempotent{fs}.Create(nil, in, name, &out)
		assert.Equal(t, st == fuse.OK, fs.opened == 1 && out.Fh == 3, "answered OK with the file opened")
		return st
	}
	before.Changing(42, 5, "f") // the daemon before noted request 42, made f, and died
	assert.Equal(t, fuse.OK, create(42|fuseUniqueResend, 5, "f"), "request 42 resent: its own file")
	assert.Equal(t, fuse.Status(syscall.EEXIST), create(42, 5, "f"), "not resent: f is there")
	assert.Equal(t, fuse.Status(syscall.EEXIST), create(43|fuseUniqueResend, 5, "f"), "another request: someone else's f")
	assert.Equal(t, fuse.Status(syscall.EEXIST), create(42|fuseUniqueResend, 6, "f"), "another folder")
	assert.Equal(t, fuse.Status(syscall.EEXIST), create(42|fuseUniqueResend, 5, "g"), "another name")
	before.Changing(42+nodelog.ChangeSlots, 5, "f") // its slot taken by a later request
	assert.Equal(t, fuse.Status(syscall.EEXIST), create(42|fuseUniqueResend, 5, "f"), "its note overwritten: the plain answer")

	unlink := func(unique uint64) fuse.Status {
		h := &fuse.InHeader{Unique: unique, NodeId: 5}
		return ResendIdempotent{&madeBefore{RawFileSystem: fuse.NewDefaultRawFileSystem()}}.Unlink(nil, h, "gone")
	}
	before.Changing(77, 5, "gone")
	assert.Equal(t, fuse.OK, unlink(77|fuseUniqueResend), "its own removal, made before the kill")
	assert.Equal(t, fuse.ENOENT, unlink(78|fuseUniqueResend), "removed by someone else")
}

// swapped is a folder whose names "a" and "b" hold inodes; an exchange swaps them.
type swapped struct {
	fuse.RawFileSystem
	inos      map[string]uint64
	exchanges int
}

func (s *swapped) Lookup(_ <-chan struct{}, _ *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	ino, ok := s.inos[name]
	if !ok {
		return fuse.ENOENT
	}
	out.NodeId, out.Attr.Ino = ino+100, ino
	return fuse.OK
}

func (s *swapped) Forget(uint64, uint64) {}

func (s *swapped) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	s.exchanges++
	s.inos[oldName], s.inos[newName] = s.inos[newName], s.inos[oldName]
	return fuse.OK
}

// A resent RENAME_EXCHANGE is answered as made, not made again (which would swap the names back), only when the
// daemon before noted it as this request's and the names hold the inodes it noted, swapped.
func TestResentExchangeIsMadeOnce(t *testing.T) {
	before, err := nodelog.New()
	require.NoError(t, err)
	defer before.Close()
	fs := &swapped{RawFileSystem: fuse.NewDefaultRawFileSystem(), inos: map[string]uint64{"a": 10, "b": 20}}
	exchange := func(unique uint64) fuse.Status {
		in := &fuse.RenameIn{InHeader: fuse.InHeader{Unique: unique, NodeId: 5}, Newdir: 5, Flags: renameExchange}
		return ResendIdempotent{fs}.Rename(nil, in, "a", "b")
	}
	require.Equal(t, fuse.OK, exchange(42))
	require.Equal(t, map[string]uint64{"a": 20, "b": 10}, fs.inos, "made")
	assert.Equal(t, fuse.OK, exchange(42|fuseUniqueResend), "resent once made: answered as made")
	assert.Equal(t, map[string]uint64{"a": 20, "b": 10}, fs.inos, "not made again")
	assert.Equal(t, 1, fs.exchanges)

	assert.Equal(t, fuse.OK, exchange(43|fuseUniqueResend), "another request, not noted: made")
	assert.Equal(t, map[string]uint64{"a": 10, "b": 20}, fs.inos)

	before.Exchanging(44, 5, "b", 10, 20) // noted, and the daemon died before it made it
	assert.Equal(t, fuse.OK, exchange(44|fuseUniqueResend))
	assert.Equal(t, map[string]uint64{"a": 20, "b": 10}, fs.inos, "resent before it was made: made")
	assert.Equal(t, 3, fs.exchanges)
}

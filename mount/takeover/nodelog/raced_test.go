package nodelog

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestNodeLogReadRacedRecord: the log's reader (the next daemon, and `sessionfs doctor` as root, which reads it
// while the daemon serves: mount.HeldBy) is neither crashed nor handed a name no request could carry by a daemon a
// session subverted that rewrites a record while it is read: whole and named "abc" when the record is scanned,
// then, when the node is read from it, its length and its name's past the mapping, or its name "..". Before, the
// second read sliced the mapping past its end (a panic), or restored the node as "..". The racing writer loops
// until a bound of reads, and the test says how many it raced.
func TestNodeLogReadRacedRecord(t *testing.T) {
	for _, c := range []struct {
		what     string
		size     uint32
		nameLen  uint32
		name     string
		expected string
	}{
		{"its length and its name's past the log", 0xfffffff8, 0xffffff, "abc", "past the log"},
		{"its name '..'", 40, 2, "..\x00", "named '..'"},
	} {
		t.Run(c.what, func(t *testing.T) {
			l, err := newSized(pageSize)
			require.NoError(t, err)
			defer l.Close()
			l.Named(7, 1, "abc", 0)
			off := l.next.Load() - 40 // the record just written: 32 bytes and a name of 3, aligned
			// The subverted daemon's own mapping of the file (a process of its own would do the same).
			mem, err := unix.Mmap(l.fd, 0, len(l.mem), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			require.NoError(t, err)
			defer unix.Munmap(mem)
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Each state held about as long as a read takes, so that one read sees both.
				for i := 0; !stop.Load(); i++ {
					copy(mem[off+recName:], "abc")
					binary.LittleEndian.PutUint32(mem[off+recKind:], kindNamed|3<<8)
					binary.LittleEndian.PutUint32(mem[off+recLength:], 40)
					spin(i % 64)
					copy(mem[off+recName:], c.name)
					binary.LittleEndian.PutUint32(mem[off+recKind:], kindNamed|c.nameLen<<8)
					binary.LittleEndian.PutUint32(mem[off+recLength:], c.size)
					spin(i % 64)
				}
			}()
			defer func() { stop.Store(true); <-done }()
			const tries = 200000
			read := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				nodes, _, _ := l.Read() // a log it cannot parse is refused: not what is tested
				for _, n := range nodes {
					if !validEntryBytes([]byte(n.Name)) {
						return fmt.Errorf("node %d restored as %q", n.ID, n.Name)
					}
				}
				return nil
			}
			for i := 1; i <= tries; i++ {
				if err := read(); err != nil {
					t.Fatalf("read %d of a record rewritten as it is read (%s): %v", i, c.expected, err)
				}
			}
			t.Logf("%d reads of a record rewritten as it is read (%s): each refused it or read it whole", tries, c.expected)
		})
	}
}

var spun atomic.Int64

// spin busies the processor for about n hundred cycles.
func spin(n int) {
	for j := 0; j < n*100; j++ {
		spun.Add(1)
	}
}

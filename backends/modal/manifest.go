package modal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/layout"
)

// BlockSize is the Volume's block: files are uploaded as 8 MiB blocks named by their SHA-256, and a block the
// Volume already holds is never sent again (an appended transcript costs one block).
const BlockSize = 8 << 20

// Entry is a file as the store and the Volume last agreed on it.
type Entry struct {
	Size        int64    `json:"size"`
	Mtime       int64    `json:"mtime"` // local, ns
	Mode        uint32   `json:"mode"`
	Blocks      []string `json:"blocks"`       // hex SHA-256 of each block
	RemoteMtime uint64   `json:"remote_mtime"` // as the Volume lists it
}

// Manifest is the last agreed state of a session and its Volume, kept beside the store's sessions (not in the
// session, so it never syncs itself).
type Manifest struct {
	Volume string           `json:"volume"`
	Files  map[string]Entry `json:"files"`
}

func manifestPath(store *layout.Store, id string) string {
	return filepath.Join(store.Root, "sync", id+".json")
}

func loadManifest(p string) (*Manifest, error) {
	m := &Manifest{Files: map[string]Entry{}}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	if m.Files == nil {
		m.Files = map[string]Entry{}
	}
	return m, nil
}

func (m *Manifest) save(p string) error {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return layout.WriteFileAtomic(p, b, 0o600)
}

// localFile is a regular file of the session as it is now.
type localFile struct {
	Size  int64
	Mtime int64
	Mode  uint32
}

// walk lists the session's regular files by slash path, beneath its folder's descriptor (layout.Dir.Walk): no
// symlink is followed, even one swapped in while the walk runs, so nothing outside the session is ever sent. The
// Volume file API carries neither symlinks nor empty folders.
func walk(d *layout.Dir) (map[string]localFile, error) {
	out := map[string]localFile{}
	err := d.Walk(func(rel string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			out[rel] = localFile{Size: st.Size, Mtime: st.Mtim.Nano(), Mode: st.Mode & 0o777}
		}
		return nil
	})
	return out, err
}

// hashBlocks returns the SHA-256 of each BlockSize block of the file rel beneath d, read only if it is a regular
// file reached with no symlink.
func hashBlocks(d *layout.Dir, rel string) ([]string, error) {
	f, err := d.OpenRegular(rel, -1)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	buf := make([]byte, BlockSize)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			sum := sha256.Sum256(buf[:n])
			out = append(out, hex.EncodeToString(sum[:]))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func readBlock(d *layout.Dir, rel string, i int) ([]byte, error) {
	f, err := d.OpenRegular(rel, -1)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, BlockSize)
	n, err := f.ReadAt(buf, int64(i)*BlockSize)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return buf[:n], nil
}

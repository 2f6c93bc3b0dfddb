package travel

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sessionfs/sessionfs/layout"
)

// FuzzImport feeds Import tars of any shape: it never panics, never writes outside the store's sessions folder,
// and either makes the whole session or leaves nothing.
func FuzzImport(f *testing.F) {
	seed := func(entries ...entry) {
		var raw bytes.Buffer
		tw := tar.NewWriter(&raw)
		for _, e := range entries {
			if tw.WriteHeader(&e.hdr) == nil {
				_, _ = tw.Write([]byte(e.body))
			}
		}
		_ = tw.Close()
		f.Add(raw.Bytes())
	}
	seed(session(file("s1/workspace/a", "x"))...)
	seed(session(link("s1/workspace/l", ".", tar.TypeSymlink), file("s1/workspace/l/x", "x"))...)
	seed(session(file("s1/workspace/a", "x"), link("s1/workspace/h", "s1/workspace/a", tar.TypeLink))...)
	seed(session(dir("s1/workspace/d/"), file("s1/workspace/d/e", "y"))...)
	seed(session(file("s1/../x", "x"))...)
	f.Fuzz(func(t *testing.T, raw []byte) {
		base := t.TempDir()
		store, err := layout.OpenStore(filepath.Join(base, "store"))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		var buf bytes.Buffer
		zw, _ := zstd.NewWriter(&buf)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		id, _, err := Import(context.Background(), store, &buf, ImportOptions{MaxBytes: 1 << 20, MaxFiles: 1000})
		ents, rerr := os.ReadDir(store.SessionsDir())
		if rerr != nil {
			t.Fatal(rerr)
		}
		switch {
		case err != nil && len(ents) != 0:
			t.Fatalf("failed (%v) and left %v", err, ents)
		case err == nil && (len(ents) != 1 || ents[0].Name() != id):
			t.Fatalf("imported %q and left %v", id, ents)
		case err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, layout.ErrInvalidID):
			t.Logf("not a refusal: %v", err) // a name too long for the filesystem, say: still all or nothing
		}
		top, _ := os.ReadDir(base)
		if len(top) != 1 {
			t.Fatalf("wrote beside the store: %v", top)
		}
	})
}

package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionfs/sessionfs/layout"
)

// Open opens session id's copy at url: s3://bucket/prefix, or another machine's store as ssh://[user@]host[:port]/path
// or [user@]host:path.
func Open(ctx context.Context, url, id string) (Remote, error) {
	if strings.HasPrefix(url, "s3://") {
		return OpenS3(ctx, url, id)
	}
	return OpenSSH(ctx, url, id)
}

// rememberedPath is where the remote last synced with session id is kept.
func rememberedPath(store *layout.Store, id string) string {
	return filepath.Join(store.Root, "sync", id, "remote")
}

// Remembered is the remote session id last synced with ("" if none).
func Remembered(store *layout.Store, id string) string {
	b, err := os.ReadFile(rememberedPath(store, id))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Remember keeps url as session id's remote, for a sync that names none.
func Remember(store *layout.Store, id, url string) error {
	if err := layout.ValidateID(id); err != nil {
		return err
	}
	if strings.ContainsAny(url, "\n\x00") {
		return errors.New("a remote's URL is one line")
	}
	p := rememberedPath(store, id)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return layout.WriteFileAtomic(p, []byte(url+"\n"), 0o600)
}

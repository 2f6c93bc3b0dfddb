package fs

import "path/filepath"

// SessionPath is the folder of session id in a mount.
func SessionPath(mountpoint, id string) string {
	return filepath.Join(mountpoint, "sessions", id)
}

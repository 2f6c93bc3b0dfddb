package claude

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// ErrNoConversation is returned by Find when no session holds the conversation.
var ErrNoConversation = errors.New("no session holds that conversation")

// Find returns the session whose transcript folder holds conversation uuid.
func Find(store *layout.Store, uuid string) (string, error) {
	if layout.ValidateID(uuid) != nil {
		return "", fmt.Errorf("%q: %w", uuid, ErrNoConversation)
	}
	ids, err := store.IDs()
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(layout.Derive(store.Dir(id)).Canonical, uuid+".jsonl")); err == nil {
			return id, nil
		}
	}
	return "", fmt.Errorf("conversation %s: %w", uuid, ErrNoConversation)
}

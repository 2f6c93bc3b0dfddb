package layout

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// MaxIDLen is the longest session id; ids are also folder names and Modal volume name parts.
const MaxIDLen = 128

var idPattern = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateID accepts exactly the ids of the convention. Anything else, ".." and "/" among them, is refused, so an
// id can never name a path outside the store.
func ValidateID(id string) error {
	if idPattern.MatchString(id) {
		return nil
	}
	return &Error{ID: printable(id), Kind: ErrInvalidID,
		Err: fmt.Errorf("want 1-%d characters of [A-Za-z0-9._-], starting with a letter or digit", MaxIDLen)}
}

// NewID makes a fresh id that sorts by creation time: 20261122-093000-1a2b3c.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// printable keeps an error message one readable line whatever the input: hostile ids may hold NULs, newlines or
// kilobytes of text.
func printable(s string) string {
	const max = 64
	r := []rune(s)
	if len(r) > max {
		return fmt.Sprintf("%s…(%d bytes)", string(r[:max]), len(s))
	}
	return s
}

package claude

import (
	"path/filepath"
	"strconv"
	"unicode/utf16"
)

// maxSanitized is where Claude Code truncates a folder name and appends a hash of the full path.
const maxSanitized = 200

// Sanitize is the folder name Claude Code gives the transcripts of a cwd under projects/: every UTF-16 code unit
// that is not [A-Za-z0-9] becomes '-' (an astral character is two units, so two dashes), and a result over 200
// units is cut to 200 and suffixed with '-' and the base36 Java string hash of the whole path. The caller passes
// the resolved path (see Resolve): the CLI sanitizes realpath(cwd).
func Sanitize(path string) string {
	units := utf16.Encode([]rune(path))
	out := make([]byte, len(units))
	for i, u := range units {
		if u < 128 && isAlnum(byte(u)) {
			out[i] = byte(u)
		} else {
			out[i] = '-'
		}
	}
	if len(out) <= maxSanitized {
		return string(out)
	}
	return string(out[:maxSanitized]) + "-" + strconv.FormatInt(abs(javaHash(units)), 36)
}

// Resolve is Sanitize of the real path of cwd, as Claude Code computes it at start-up. A path that cannot be
// resolved (it does not exist) is sanitized as given.
func Resolve(cwd string) string {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	return Sanitize(cwd)
}

// IsFolderName reports whether name could have been made by Sanitize: 1 to 255 bytes of [A-Za-z0-9-]. These are
// the names that alias a session's transcript folder.
func IsFolderName(name string) bool {
	if len(name) == 0 || len(name) > 255 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c != '-' && !isAlnum(c) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// javaHash is Java's String.hashCode (h = 31*h + unit with int32 wraparound), which Claude Code borrows.
func javaHash(units []uint16) int32 {
	var h int32
	for _, u := range units {
		h = 31*h + int32(u)
	}
	return h
}

func abs(h int32) int64 {
	if h < 0 {
		return -int64(h)
	}
	return int64(h)
}

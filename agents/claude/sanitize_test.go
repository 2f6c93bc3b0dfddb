package claude

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestSanitize(t *testing.T) {
	long := "/home/u/" + strings.Repeat("x", 200)
	tests := []struct {
		in, want string
	}{
		// The vectors of design.md, each checked against the real CLI.
		{"/home/u/my.proj", "-home-u-my-proj"},
		{"/home/u/café", "-home-u-caf-"},
		{"/home/u/proj ünï😀/sub.dir", "-home-u-proj--n----sub-dir"},
		{"/", "-"},
		{long, "-home-u-" + strings.Repeat("x", 192) + "-kg56d7"},
		// Our own.
		{"/session/workspace", "-session-workspace"},
		{"", ""},
		{"/a--b__c", "-a--b--c"},
		{"/Case/Kept/123", "-Case-Kept-123"},
		{"/tmp/" + strings.Repeat("y", 195), "-tmp-" + strings.Repeat("y", 195)}, // exactly 200: no hash
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Sanitize(tt.in), "Sanitize(%q)", tt.in)
	}
}

func TestSanitizeLongPathsDifferOnlyByHash(t *testing.T) {
	a := Sanitize("/p/" + strings.Repeat("a", 300) + "/one")
	b := Sanitize("/p/" + strings.Repeat("a", 300) + "/two")
	assert.NotEqual(t, a, b, "paths sharing their first 200 units must still get different folders")
	assert.Equal(t, a[:200], b[:200])
}

func TestIsFolderName(t *testing.T) {
	assert.True(t, IsFolderName("-session-workspace"))
	assert.True(t, IsFolderName(strings.Repeat("a", 255)))
	for _, bad := range []string{"", ".", "..", "a/b", "a.b", "a b", "é", strings.Repeat("a", 256), "a\x00"} {
		assert.False(t, IsFolderName(bad), "%q", bad)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"/home/u/my.proj", "/home/u/café", "😀", "/", strings.Repeat("z", 250)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // paths from the OS reach Claude Code as JS strings; invalid UTF-8 never does
		}
		got := Sanitize(s)
		if s != "" && !IsFolderName(got) {
			t.Fatalf("Sanitize(%q) = %q: not a folder name", s, got)
		}
		if len(got) > 207 {
			t.Fatalf("Sanitize(%q) is %d bytes, over 207", s, len(got))
		}
		if Sanitize(s) != got {
			t.Fatal("not deterministic")
		}
	})
}

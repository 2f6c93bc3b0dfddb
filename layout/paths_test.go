package layout

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateID(t *testing.T) {
	for _, ok := range []string{"a", "A-1", "0.9_x", "s-20261122", strings.Repeat("a", 128)} {
		assert.NoError(t, ValidateID(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "/abs", "-lead", ".hidden", "_x", "a b", "a\x00b",
		"é", "😀", strings.Repeat("a", 129), strings.Repeat("x", 4096), "a\nb"} {
		err := ValidateID(bad)
		require.Error(t, err, "%q", bad)
		assert.ErrorIs(t, err, ErrInvalidID)
		assert.NotContains(t, err.Error(), "\n"+strings.Repeat("x", 100), "errors stay short")
	}
}

func TestNewIDIsValid(t *testing.T) {
	id := NewID(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	require.NoError(t, ValidateID(id))
	assert.True(t, strings.HasPrefix(id, "20261122-093000-"))
}

func TestDerive(t *testing.T) {
	p := Derive("/st/sessions/x")
	assert.Equal(t, "/st/sessions/x/workspace", p.Workspace)
	assert.Equal(t, "/st/sessions/x/.claude", p.Claude)
	assert.Equal(t, "/st/sessions/x/.claude/projects/-session-workspace", p.Canonical)
	assert.Equal(t, "/session/.claude", ContainerPaths.Claude)
	assert.Equal(t, "/session/workspace", ContainerPaths.Workspace)
}

func TestContainerMapping(t *testing.T) {
	root := "/home/u/agent-sessions/sessions/s1"
	tests := []struct{ host, container string }{
		{root, "/session"},
		{root + "/workspace", "/session/workspace"},
		{root + "/workspace/a/b.txt", "/session/workspace/a/b.txt"},
		{root + "/.claude/projects/-session-workspace", "/session/.claude/projects/-session-workspace"},
	}
	for _, tt := range tests {
		c, err := ToContainer(root, tt.host)
		require.NoError(t, err)
		assert.Equal(t, tt.container, c)
		h, err := ToHost(root, tt.container)
		require.NoError(t, err)
		assert.Equal(t, tt.host, h)
	}
	for _, bad := range []string{root + "/../s2", root + "2/x", "/etc/passwd", root + "/workspace/../../s2", "relative"} {
		_, err := ToContainer(root, bad)
		assert.ErrorIs(t, err, ErrOutside, bad)
	}
	for _, bad := range []string{"/session/../etc", "/sessionx", "/etc", "session/x", "/session/workspace/../../x"} {
		_, err := ToHost(root, bad)
		assert.ErrorIs(t, err, ErrOutside, bad)
	}
}

func FuzzContainerMapping(f *testing.F) {
	f.Add("/session/workspace/x")
	f.Add("/session/../x")
	f.Fuzz(func(t *testing.T, cp string) {
		const root = "/r/sessions/s"
		h, err := ToHost(root, cp)
		if err != nil {
			return
		}
		if h != root && !strings.HasPrefix(h, root+"/") {
			t.Fatalf("ToHost(%q) = %q escapes the session", cp, h)
		}
		back, err := ToContainer(root, h)
		if err != nil {
			t.Fatalf("round trip of %q: %v", cp, err)
		}
		if back2, _ := ToHost(root, back); back2 != h {
			t.Fatalf("round trip of %q: %q != %q", cp, back2, h)
		}
	})
}

func FuzzValidateID(f *testing.F) {
	f.Add("abc")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateID(id) != nil {
			return
		}
		if strings.ContainsAny(id, "/\x00") || id == "." || id == ".." || strings.HasPrefix(id, ".") {
			t.Fatalf("accepted %q", id)
		}
	})
}

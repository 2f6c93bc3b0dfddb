package claude

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/layout"
)

// testdata/projects/-tmp-wd holds transcripts written by the real claude CLI 2.1.197 against the e2e stub API: a
// plain conversation resumed once, and one that spawned a subagent.
const realDir = "testdata/projects/-tmp-wd"

func TestConversationsOnRealTranscripts(t *testing.T) {
	convs, err := Conversations(realDir)
	require.NoError(t, err)
	require.Len(t, convs, 2)
	byID := map[string]agents.Conversation{}
	for _, c := range convs {
		byID[c.ID] = c
	}
	plain := byID["a9591006-baa7-4a7a-bbe2-fc4551896ce7"]
	assert.Equal(t, "hello there", plain.FirstPrompt)
	assert.Equal(t, 4, plain.Messages, "two turns: a user and an assistant line each")
	assert.Equal(t, []string{"/tmp/wd"}, plain.Cwds)
	assert.Zero(t, plain.Subagents)
	assert.Zero(t, plain.Malformed)
	assert.True(t, plain.Last.After(plain.First))

	agent := byID["efa92ef9-e802-408b-8900-34b6a9691f2b"]
	assert.Equal(t, 1, agent.Subagents)
	assert.Contains(t, agent.FirstPrompt, "DELEGATE-TO-SUBAGENT")
}

func TestMalformedLinesAreCountedAndSkipped(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(realDir, "a9591006-baa7-4a7a-bbe2-fc4551896ce7.jsonl"))
	require.NoError(t, err)
	bad := "not json\n{\"type\":\n" + string(good) + "\x00\x01garbage\n" + `{"type":"user","message":{"role":"user","content":"torn`
	p := filepath.Join(dir, "x.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(bad), 0o600))
	c, err := ReadConversation(p)
	require.NoError(t, err)
	assert.Equal(t, 4, c.Malformed)
	assert.Equal(t, 4, c.Messages)
	assert.Equal(t, "hello there", c.FirstPrompt)
}

func TestOverlongLineIsMalformedNotFatal(t *testing.T) {
	in := `{"type":"user","message":{"role":"user","content":"a"}}` + "\n" + strings.Repeat("x", agents.MaxLine+10) + "\n" +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"b"}]}}` + "\n"
	var types []string
	n, err := ScanEntries(strings.NewReader(in), func(e *Entry) { types = append(types, e.Type+":"+e.Text()) })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"user:a", "assistant:b"}, types)
}

func TestConversationsOfMissingFolder(t *testing.T) {
	convs, err := Conversations(filepath.Join(t.TempDir(), "nope"))
	require.NoError(t, err)
	assert.Empty(t, convs)
}

func FuzzScanEntries(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"))
	f.Add([]byte("{\n}\n\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ScanEntries(strings.NewReader(string(b)), func(e *Entry) { _ = e.Text() })
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestSessionConversationsAcrossFolders(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, ".claude", "projects")
	for _, folder := range []string{"-session-workspace", "-tmp-wd", "-other"} {
		require.NoError(t, os.MkdirAll(filepath.Join(projects, folder), 0o755))
	}
	copyFile := func(name, folder string) {
		b, err := os.ReadFile(filepath.Join(realDir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(projects, folder, name), b, 0o600))
	}
	copyFile("a9591006-baa7-4a7a-bbe2-fc4551896ce7.jsonl", "-session-workspace")
	copyFile("a9591006-baa7-4a7a-bbe2-fc4551896ce7.jsonl", "-other") // the same conversation twice
	copyFile("efa92ef9-e802-408b-8900-34b6a9691f2b.jsonl", "-tmp-wd")
	// A FIFO and a link to a host transcript are neither read nor counted.
	require.NoError(t, syscall.Mkfifo(filepath.Join(projects, "-other", "0fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(realDir, "efa92ef9-e802-408b-8900-34b6a9691f2b.jsonl"),
		filepath.Join(projects, "-other", "1fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl")))
	sess, err := layout.OpenDir(root)
	require.NoError(t, err)
	defer sess.Close()
	convs, err := SessionConversations(sess)
	require.NoError(t, err)
	assert.Len(t, convs, 2, "each conversation once, wherever Claude filed it")
	assert.Equal(t, 2, CountConversations(sess))
	empty, err := layout.OpenDir(t.TempDir())
	require.NoError(t, err)
	defer empty.Close()
	assert.Zero(t, CountConversations(empty))
}

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// runLogCmd runs sessionfs log with args against store, returning what it printed and its error.
func runLogCmd(t *testing.T, store string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(append([]string{"--store", store, "log"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

func TestLogFindsByConversationOrSession(t *testing.T) {
	dir := t.TempDir()
	s, err := layout.OpenStore(dir)
	require.NoError(t, err)
	_, err = s.Create("demo", layout.CreateOptions{})
	require.NoError(t, err)
	transcripts := filepath.Join(s.Dir("demo"), ".claude/projects", layout.CanonicalProject)
	require.NoError(t, os.CopyFS(transcripts, os.DirFS("../../agents/claude/testdata/projects/-tmp-wd")))

	out, err := runLogCmd(t, dir, "demo")
	require.NoError(t, err)
	assert.Contains(t, out, "# claude conversation a9591006-baa7-4a7a-bbe2-fc4551896ce7", "its latest")
	out, err = runLogCmd(t, dir, "efa92ef9-e802-408b-8900-34b6a9691f2b")
	require.NoError(t, err)
	assert.Contains(t, out, "> ### Subagent aa60665581de99ce5")
	out, err = runLogCmd(t, dir, "demo", "efa92ef9", "--json")
	require.NoError(t, err)
	assert.Contains(t, out, `"kind":"tool_call"`)

	for _, args := range [][]string{{"nope"}, {"demo", "nope"}, {"demo", "--agent", "codex"}, {"gone", "x"}} {
		_, err = runLogCmd(t, dir, args...)
		require.Error(t, err, "%v", args)
		var coded codedError
		assert.False(t, errors.As(err, &coded), "%v: not found exits %d, as for any session not found: %v", args, ownFailure, err)
		assert.Contains(t, err.Error(), "no such")
	}
	_, err = runLogCmd(t, dir, "demo", "--agent", "vim")
	assert.True(t, isUsage(err), "%v", err)
}

// log and logs say which is which in their help.
func TestLogAndLogsNameEachOther(t *testing.T) {
	root := newRootCmd()
	for name, other := range map[string]string{"log": `"sessionfs logs RUN"`, "logs": `"sessionfs log"`} {
		c, _, err := root.Find([]string{name})
		require.NoError(t, err)
		assert.Contains(t, c.Long, other)
	}
}

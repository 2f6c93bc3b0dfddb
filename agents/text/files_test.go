package text

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
	"github.com/sessionfs/sessionfs/layout"
)

// TestFilesNamesEverySubagentTheReadingReads: what a rendering reads is named by Files (the text view grants a
// rendering what all of them grant): a transcript with a subagent reads both, one with none its own file alone.
func TestFilesNamesEverySubagentTheReadingReads(t *testing.T) {
	sess := claudeSession(t)
	dir := ".claude/projects/" + layout.CanonicalProject + "/"
	fs, err := Files(sess, claude.Agent, conversation(t, sess, claude.Agent, "efa92ef9-e802-408b-8900-34b6a9691f2b"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		dir + "efa92ef9-e802-408b-8900-34b6a9691f2b.jsonl",
		dir + "efa92ef9-e802-408b-8900-34b6a9691f2b/subagents/agent-aa60665581de99ce5.jsonl",
	}, fs)
	fs, err = Files(sess, claude.Agent, conversation(t, sess, claude.Agent, "a9591006-baa7-4a7a-bbe2-fc4551896ce7"))
	require.NoError(t, err)
	assert.Equal(t, []string{dir + "a9591006-baa7-4a7a-bbe2-fc4551896ce7.jsonl"}, fs)
}

package all

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithoutChildVars(t *testing.T) {
	env := []string{"PATH=/bin", "CLAUDECODE=1", "CLAUDE_CODE_CHILD_SESSION=1", "CLAUDE_CONFIG_DIR=/x", "CODEX_SANDBOX=seatbelt",
		"GEMINI_CLI=1", "GEMINI_CLI_HOME=/g", "QWEN_CODE=1", "OPENCODE=1", "OPENCODE_PID=7", "HOME=/h"}
	got := WithoutChildVars(env)
	assert.Equal(t, []string{"PATH=/bin", "CLAUDE_CONFIG_DIR=/x", "GEMINI_CLI_HOME=/g", "HOME=/h"}, got,
		"every agent's marks on its children go; what points an agent somewhere stays")
	assert.Equal(t, "CLAUDECODE=1", env[1], "the caller's slice is left as it was")
	for _, a := range Agents {
		assert.NotEmpty(t, a.ChildVars, "%s: what its runtime sets for its children", a.Name)
	}
}

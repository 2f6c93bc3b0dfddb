package travel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAttackCopilotProvidersIsCredential: Copilot's providers.json holds BYOK providers' apiKey and bearerToken
// (schemas/api.schema.json ProviderConfig) in plain text; an export packs it.
func TestAttackCopilotProvidersIsCredential(t *testing.T) {
	assert.True(t, IsCredential(".copilot/providers.json"), "Copilot's BYOK keys are exported")
}

// TestAttackKimiServerTokenIsCredential: Kimi Code keeps the Bearer token of its local server (kimi server,
// which can listen on the LAN and runs the agent) in KIMI_CODE_HOME/server.token, persistent
// (kap-server persistentToken.ts: loadOrCreateServerToken); an export packs it.
func TestAttackKimiServerTokenIsCredential(t *testing.T) {
	assert.True(t, IsCredential(".kimi-code/server.token"), "Kimi's local server token is exported")
}

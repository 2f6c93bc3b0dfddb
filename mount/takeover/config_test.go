package takeover

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A holder hands its helper's configuration on whole (an upgrade, a move): the fields it does not read too, and
// the places a move sets.
func TestConfigHandedOnWhole(t *testing.T) {
	given := `{"Store":"/s","Mountpoint":"/m","MaxBinds":64,"ReadOnly":true,"Takeover":{"Timeout":5}}`
	var c Config
	require.NoError(t, json.Unmarshal([]byte(given), &c))
	assert.Equal(t, "/s", c.Store)
	assert.JSONEq(t, `{"Timeout":5}`, string(c.Takeover))
	out, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, given, string(out))

	c.Store, c.Mountpoint = "/other", "/there"
	out, err = json.Marshal(movedState{Config: c})
	require.NoError(t, err)
	var back movedState
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Equal(t, "/there", back.Config.Mountpoint)
	whole, err := json.Marshal(back.Config)
	require.NoError(t, err)
	assert.JSONEq(t, `{"Store":"/other","Mountpoint":"/there","MaxBinds":64,"ReadOnly":true,"Takeover":{"Timeout":5}}`, string(whole))

	var unheld Config
	require.NoError(t, json.Unmarshal([]byte(`{"Store":"/s","Takeover":null}`), &unheld))
	assert.Empty(t, unheld.Takeover, "no options: not held")
}

package claude

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAsksTurn(t *testing.T) {
	for args, want := range map[string]bool{
		"-p hi": true, "--print hi": true, "-p --continue hi": true, "--resume abc -p hi": true, "-phi": true,
		"": false, "--resume abc": false, "-c": false, "mcp list": false, "-p --help": false, "--version": false,
		"-p --no-session-persistence hi": false, "-- -p": false, "--permission-mode plan": false,
	} {
		var a []string
		if args != "" {
			a = strings.Fields(args)
		}
		assert.Equal(t, want, asksTurn(a), "claude %s", args)
	}
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdleFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 720 * time.Hour, "12h": 12 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute} {
		var f idleFlag
		require.NoError(t, f.Set(in), in)
		assert.Equal(t, want, time.Duration(f), in)
	}
	for _, bad := range []string{"-5h", "0", "0d", "-1d", "d", "x", "5", "1d-2h", "99999999d"} {
		var f idleFlag
		assert.Error(t, f.Set(bad), bad)
	}
}

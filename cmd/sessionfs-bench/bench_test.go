package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRotated(t *testing.T) {
	s := []string{"plain", "exec", "mount"}
	assert.Equal(t, s, rotated(s, 0))
	assert.Equal(t, []string{"exec", "mount", "plain"}, rotated(s, 1))
	assert.Equal(t, []string{"mount", "plain", "exec"}, rotated(s, 5))
	assert.Equal(t, []string{"plain", "exec", "mount"}, s, "the places' own order is kept")
	assert.Empty(t, rotated([]string(nil), 2))
}

func TestParseAgentOutput(t *testing.T) {
	out := "untar 1500000000\ntimes untar\n0m0.000000s 0m0.004000s\n0m1.200000s 0m0.300000s\n" +
		"git-add 2000000000\ntimes git-add\n0m 0.00s 0m 0.00s\n1m 1.50s 0m 0.50s\n"
	got := parseAgentOutput(out)
	assert.Equal(t, 1500*time.Millisecond, got["untar"])
	assert.Equal(t, 2*time.Second, got["git-add"])
	assert.Equal(t, 1500*time.Millisecond, got[cpuStep("untar")], "the children's user+sys")
	assert.Equal(t, time.Minute+500*time.Millisecond, got[cpuStep("git-add")], "the growth since the step before")
}

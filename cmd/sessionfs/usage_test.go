package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpAndCompletionRefuseUnknownNames (issue 50): help of no such command and completion of no such shell are
// usage errors (exit 125), as every other command's; before, both printed help and exited 0.
func TestHelpAndCompletionRefuseUnknownNames(t *testing.T) {
	run := func(args ...string) error {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		return root.Execute()
	}
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "ls", "extra"}, {"completion", "nosuch"}} {
		err := run(args...)
		require.Error(t, err, "%v", args)
		assert.True(t, isUsage(err), "%v: a usage error (exit 125): %v", args, err)
	}
	for _, args := range [][]string{{"help"}, {"help", "ls"}, {"help", "trash", "restore"}, {"completion"}} {
		assert.NoError(t, run(args...), "%v", args)
	}
}

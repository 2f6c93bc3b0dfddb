//go:build !nobackends

package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestForBackends: what sessionfs hands to sessionfs-backends is the command the line names, wherever the root's
// flags, help or a completion request put it; a session or an argument named like a command is not one.
func TestForBackends(t *testing.T) {
	for _, args := range [][]string{
		{"run", "s1", "--", "claude"}, {"--store", "/s", "run", "s1"}, {"--store=/s", "doctor"}, {"csi", "--help"},
		{"help", "sync"}, {"__complete", "run", "--backend", ""}, {"__completeNoDesc", "--store", "/s", "resume", ""},
		{"sync-serve", "s1"}, {"__docs", "."},
	} {
		assert.True(t, forBackends(args), "%q", args)
	}
	for _, args := range [][]string{
		nil, {"ls"}, {"exec", "s1", "--", "run"}, {"--store", "run", "ls"}, {"help"}, {"__complete", "ru"},
		{"__complete", ""}, {"find", "doctor"}, {"mount", "--daemon"}, {"--help"},
	} {
		assert.False(t, forBackends(args), "%q", args)
	}
}

// TestBackendCommandsAreLinked: this (the whole) build links every command of backendCommands, under that name,
// with that line of help (the lean build lists them from the table alone), and the manual's.
func TestBackendCommandsAreLinked(t *testing.T) {
	var names []string
	for _, c := range (&app{}).backendCmds() {
		names = append(names, c.Name())
		if c.Name() != docsCommand {
			assert.Equal(t, backendCommands[c.Name()], c.Short, c.Name())
		}
	}
	for name := range backendCommands {
		assert.True(t, slices.Contains(names, name), name)
	}
	assert.Len(t, names, len(backendCommands)+1)
	assert.Contains(t, names, docsCommand)
}

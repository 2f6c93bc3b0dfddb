package main

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

// Every command a user can run shows examples in its --help.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			assert.NotEmpty(t, sub.Example, "sessionfs %s has no examples", sub.CommandPath())
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// Numbers that make no sense are refused before anything is mounted or handed to a daemon.
func TestMountRefusesBadNumbers(t *testing.T) {
	for _, args := range [][]string{
		{"--max-nodes", "-5"},
		{"--max-nodes=-1", "--daemon"},
		{"--cache-timeout", "-1s"},
	} {
		root := newRootCmd()
		dir := t.TempDir()
		root.SetArgs(append([]string{"--store", filepath.Join(dir, "store"), "mount", filepath.Join(dir, "mnt")}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		assert.True(t, isUsage(err), "%v: %v", args, err)
		assert.NoDirExists(t, filepath.Join(dir, "store"), "%v made the store", args)
	}
}

func TestPlainArgsError(t *testing.T) {
	for msg, want := range map[string]string{
		"accepts 1 arg(s), received 0":                "usage: sessionfs show ID (got nothing)",
		"requires at least 1 arg(s), only received 0": "usage: sessionfs show ID (got nothing)",
		"accepts at most 1 arg(s), received 3":        "usage: sessionfs show ID (got 3 arguments)",
		"accepts between 1 and 2 arg(s), received 1":  "usage: sessionfs show ID (got 1 argument)",
		"unknown flag: --bogus":                       "unknown flag: --bogus",
	} {
		assert.Equal(t, want, plainArgsError(msg, "sessionfs show ID [flags]"), msg)
	}
}

package main

import (
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

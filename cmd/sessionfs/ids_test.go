package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionfs/sessionfs/agents"
)

// The short id watch prints is a start find and resume take: an opencode id's is what follows "ses_".
func TestStartsConversation(t *testing.T) {
	oc := agents.Conversation{Agent: "opencode", ID: "ses_ded6b2d63ffeDfX52jks6UEQD8"}
	assert.True(t, startsConversation(oc, "ded6b2d6"))
	assert.True(t, startsConversation(oc, "ses_ded6"))
	assert.False(t, startsConversation(oc, "ffeDfX52"))
	cl := agents.Conversation{Agent: "claude", ID: "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01"}
	assert.True(t, startsConversation(cl, "2FE2D21B"))
	assert.False(t, startsConversation(agents.Conversation{Agent: "claude", ID: "ses_2fe2d21b"}, "2fe2d21b"), "only opencode's ids have the prefix")
}

// A mistyped name is answered with the close ones: another case, a letter or two off, a start in another case.
func TestCloseIDs(t *testing.T) {
	ids := []string{"demo", "scratch", "web-old", "20261125-101010-abcdef"}
	assert.Equal(t, []string{"scratch"}, closeIDs("scrach", ids))
	assert.Equal(t, []string{"demo"}, closeIDs("Demo", ids))
	assert.Equal(t, []string{"web-old"}, closeIDs("WEB", ids))
	assert.Empty(t, closeIDs("nothing-like-it", ids))
	assert.Equal(t, 3, editDistance("kitten", "sitting"))
	assert.Equal(t, 1, editDistance("dmeo", "demo"), "a swap of neighbours is one edit")
	assert.Equal(t, []string{"demo"}, closeIDs("dmeo", ids), "a transposed name is suggested (issue 50)")
}

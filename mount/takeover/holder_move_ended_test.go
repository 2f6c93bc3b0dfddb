package takeover

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMoveHolderEndedWithTakenUnread: a holder moving killed once "taken" came and before it read it closes its end
// with data unread, which the asker reads as ECONNRESET, not an end: it ended all the same, and never serves on
// (that it says first). One that serves on is never taken for one that ended.
func TestMoveHolderEndedWithTakenUnread(t *testing.T) {
	holder, asker := movePair(t)
	_, err := asker.Write([]byte(moveTaken))
	require.NoError(t, err)
	holder.Close()
	err = expectWord(asker, moveGone)
	t.Logf("the asker reads: %v", err)
	assert.True(t, holderEnded(err), "a holder killed with 'taken' unread: %v", err)

	holder, asker = movePair(t)
	_, err = asker.Write([]byte(moveTaken))
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(holder).Encode(upgradeReply{Error: "the asker did not say it took the mount"}))
	holder.Close()
	err = expectWord(asker, moveGone)
	assert.Error(t, err)
	assert.False(t, holderEnded(err), "a holder serving on is told from one that ended: %v", err)
}

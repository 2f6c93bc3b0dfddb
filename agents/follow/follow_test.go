package follow

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/layout"
)

// lockedBuffer is an output a Follower writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}

// TestWatchOpencode: opencode's messages are rows of a database that appears in the session after watch began
// (its folder two levels below .opencode); each message written then is printed once, in order, marked
// [opencode] under the 8 characters after "ses_".
func TestWatchOpencode(t *testing.T) {
	root := t.TempDir()
	sess, err := layout.OpenDir(root)
	require.NoError(t, err)
	defer sess.Close()
	p := layout.Derive(root)
	require.NoError(t, os.MkdirAll(p.Projects, 0o755))
	out := &lockedBuffer{}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(sess, root, p.Projects, out, Options{}).Run(ctx) }()
	time.Sleep(200 * time.Millisecond) // watching

	// opencode makes its folders, then the database, then writes to it (its log).
	dbPath := filepath.Join(root, ".opencode", "data", "opencode", "opencode.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(dbPath), 0o755))
	ddl, err := os.ReadFile(filepath.Join("..", "opencode", "testdata", "schema.sql"))
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	defer db.Close()
	_, err = db.Exec(string(ddl))
	require.NoError(t, err)
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := db.Exec(q, args...)
		require.NoError(t, err, q)
	}
	exec(`INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', 1, 1, '[]')`)
	exec(`INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
		VALUES ('ses_ded6b2d63ffeDfX5', 'global', 's', '/w', 't', '1.18.33', 1795600000000, 1795600000000)`)
	message := func(n int, role, text string) {
		t.Helper()
		ms := 1795600000000 + int64(n)*1000
		exec(`INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, 'ses_ded6b2d63ffeDfX5', ?, ?, ?)`,
			fmt.Sprintf("msg_%02d", n), ms, ms, fmt.Sprintf(`{"role":%q,"time":{"created":%d,"completed":%d}}`, role, ms, ms))
		exec(`INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, 'ses_ded6b2d63ffeDfX5', ?, ?, ?)`,
			fmt.Sprintf("prt_%02d", n), fmt.Sprintf("msg_%02d", n), ms, ms, fmt.Sprintf(`{"type":"text","text":%q}`, text))
	}
	want := []string{}
	waitFor := func() {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) && len(out.lines()) < len(want) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second) // and nothing more comes
		got := out.lines()
		require.Len(t, got, len(want), "%q", got)
		for i, l := range got {
			// The rows' times are fixed (2026-11-25): a date is printed on any other day.
			assert.Regexp(t, `^ded6b2d6 (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d \[opencode\] `+want[i]+`$`, l)
		}
	}
	for i := 1; i <= 3; i++ {
		message(2*i, "user", fmt.Sprintf("prompt %d", i))
		message(2*i+1, "assistant", fmt.Sprintf("reply %d", i))
		want = append(want, fmt.Sprintf("user +prompt %d", i), fmt.Sprintf("assistant reply %d", i))
		waitFor()
	}
	stop()
	require.NoError(t, <-done)
}

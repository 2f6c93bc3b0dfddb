package follow

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/layout"
)

// TestFromStartByTime: what a session's conversations hold is printed by time, every conversation and agent
// interleaved (not file by file), and a message of another day than today carries its date.
func TestFromStartByTime(t *testing.T) {
	root := t.TempDir()
	sess, err := layout.OpenDir(root)
	require.NoError(t, err)
	defer sess.Close()
	p := layout.Derive(root)
	proj := filepath.Join(p.Projects, "-session-workspace")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	now := time.Now()
	old := now.AddDate(0, 0, -2)
	stamp := func(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
	claudeLine := func(at time.Time, text string) string {
		return fmt.Sprintf(`{"type":"user","timestamp":%q,"message":{"role":"user","content":%q}}`, stamp(at), text) + "\n"
	}
	write := func(path string, lines ...string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	}
	write(filepath.Join(proj, "aaaaaaaa-0000-4000-8000-000000000001.jsonl"),
		claudeLine(old, "a1"), `{"type":"summary","summary":"no time"}`+"\n", claudeLine(now.Add(-3*time.Second), "a2"))
	write(filepath.Join(proj, "bbbbbbbb-0000-4000-8000-000000000002.jsonl"),
		claudeLine(old.Add(time.Minute), "b1"), claudeLine(now.Add(-2*time.Second), "b2"))
	write(filepath.Join(root, ".codex", "sessions", "2026", "11", "23", "rollout-2026-11-23T07-05-15-01a20739-265b-7793-acee-f94fce8f06e3.jsonl"),
		fmt.Sprintf(`{"timestamp":%q,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"c1"}]}}`, stamp(old.Add(2*time.Minute)))+"\n")

	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // what they hold, then done
	require.NoError(t, New(sess, root, p.Projects, &out, Options{FromStart: true}).Run(ctx))
	day := `\d{4}-\d\d-\d\d `
	want := []string{`aaaaaaaa ` + day + `\S+ user +a1`, `bbbbbbbb ` + day + `\S+ user +b1`, `01a20739 ` + day + `\S+ \[codex\] user c1`,
		`aaaaaaaa (` + day + `)?\d\d:\d\d:\d\d user +a2`, `bbbbbbbb (` + day + `)?\d\d:\d\d:\d\d user +b2`} // a date only across midnight
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, got, len(want), out.String())
	for i, re := range want {
		assert.Regexp(t, regexp.MustCompile(`^`+re+`$`), got[i])
	}
	assert.Contains(t, got[0], old.Format("2006-01-02 15:04:05"), "the date and time of a message not of today")

	// The raw entries come in the same order.
	out.Reset()
	require.NoError(t, New(sess, root, p.Projects, &out, Options{FromStart: true, JSON: true}).Run(ctx))
	var texts []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if m := regexp.MustCompile(`"(?:content|text)":"(\w\d)"`).FindStringSubmatch(l); m != nil {
			texts = append(texts, m[1])
		}
	}
	assert.Equal(t, []string{"a1", "b1", "c1", "a2", "b2"}, texts, out.String())
}

// A tail's line gives its time back as Render printed it, with or without the date, or as opencode's JSON holds it.
func TestTailTime(t *testing.T) {
	old := time.Date(2026, 11, 24, 10, 0, 5, 0, time.Local)
	assert.True(t, old.Equal(tailTime("ded6b2d6 2026-11-24 10:00:05 [opencode] user hi", false)))
	y, m, d := time.Now().Date()
	assert.True(t, time.Date(y, m, d, 9, 1, 2, 0, time.Local).Equal(tailTime("ded6b2d6 09:01:02 [opencode] user hi", false)))
	assert.True(t, time.UnixMilli(1795600000000).Equal(tailTime(`{"info":{"time":{"created":1795600000000}},"parts":[]}`, true)))
	assert.True(t, tailTime("ded6b2d6 --:--:-- [opencode] user hi", false).IsZero())
}

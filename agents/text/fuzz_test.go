package text

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionfs/sessionfs/agents/claude"
)

// FuzzEntries: whatever a session writes as a Claude transcript, reading it neither fails nor panics, and every
// entry is safe for a terminal and bounded.
func FuzzEntries(f *testing.F) {
	for _, name := range []string{"a9591006-baa7-4a7a-bbe2-fc4551896ce7.jsonl", "efa92ef9-e802-408b-8900-34b6a9691f2b.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../claude/testdata/projects/-tmp-wd", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(prompt("\x1b]52;c;aGk=\x07") + `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"\u001b","input":"x"}]}}`)
	f.Add(`{"type":"user","isSidechain":true,"agentId":"\u009b","toolUseResult":{"agentId":"../../x"},"message":{"content":[{"type":"tool_result","content":[{"type":"image"}]}]}}`)
	f.Add(`{"type":"system","subtype":"x","content":[{"text":"\u202e"}],"cwd":"\u0000"}` + "\n" + `{"type":"summary","summary":"\xff"}`)
	f.Fuzz(func(t *testing.T, body string) {
		sess, c, _ := hostile(t, body)
		var b strings.Builder
		p := NewPrinter(&b)
		err := Entries(sess, claude.Agent, c, func(e Entry) error {
			terminalSafe(t, e.Text)
			terminalSafe(t, e.Tool)
			terminalSafe(t, e.Subagent)
			if len(e.Text) > MaxText+64 {
				t.Fatalf("an entry of %d bytes", len(e.Text))
			}
			return p.Entry(e)
		})
		if err != nil {
			t.Fatal(err)
		}
		terminalSafe(t, b.String())
	})
}

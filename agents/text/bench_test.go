package text

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents/claude"
)

// transcript10MB is a Claude transcript of about 10 MB shaped as real ones are: turns of a prompt, a reply with
// a tool call, its result (a few KB of output), and the metadata lines Claude writes between them.
func transcript10MB(tb testing.TB) string {
	var b strings.Builder
	line := func(v any) {
		j, err := json.Marshal(v)
		require.NoError(tb, err)
		b.Write(j)
		b.WriteByte('\n')
	}
	output := strings.Repeat("ok  \tgithub.com/example/project/pkg\t0.123s\n", 80)
	for i := 0; b.Len() < 10<<20; i++ {
		ts := fmt.Sprintf("2026-11-26T01:%02d:%02d.000Z", i/60%60, i%60)
		meta := map[string]any{"cwd": "/session/workspace", "sessionId": hostileID, "timestamp": ts, "version": "2.1.197",
			"uuid": fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), "isSidechain": false, "userType": "external"}
		with := func(m map[string]any) map[string]any {
			for k, v := range meta {
				m[k] = v
			}
			return m
		}
		line(with(map[string]any{"type": "user", "message": map[string]any{"role": "user",
			"content": fmt.Sprintf("step %d: run the tests of the project and fix what fails, then tell me", i)}}))
		line(with(map[string]any{"type": "attachment", "attachment": map[string]any{"type": "skill_listing",
			"content": strings.Repeat("- a skill: what it does. ", 40)}}))
		line(with(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "I'll run the tests first.\n\nThen I'll look at what fails."},
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": "Bash",
				"input": map[string]any{"command": "go test ./...", "description": "Run the tests", "timeout": 120000}},
		}, "usage": map[string]any{"input_tokens": 1200, "output_tokens": 80}}}))
		line(with(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", i), "content": output},
		}}, "toolUseResult": map[string]any{"stdout": output, "stderr": "", "interrupted": false}}))
	}
	return b.String()
}

func benchSession(b *testing.B) (string, func(io.Writer) error) {
	sess, c, dir := hostile(b, transcript10MB(b))
	p := filepath.Join(dir, hostileID+".jsonl")
	return p, func(w io.Writer) error { return Render(w, sess, claude.Agent, c) }
}

// BenchmarkRender10MB renders a 10 MB transcript (compare BenchmarkCat10MB: reading it as cat does).
func BenchmarkRender10MB(b *testing.B) {
	p, render := benchSession(b)
	st, err := os.Stat(p)
	require.NoError(b, err)
	b.SetBytes(st.Size())
	var out countingWriter
	b.ResetTimer()
	for range b.N {
		out = 0
		require.NoError(b, render(&out))
	}
	b.ReportMetric(float64(out), "out-bytes")
}

// BenchmarkCat10MB reads the same transcript to nowhere, as cat > /dev/null does.
func BenchmarkCat10MB(b *testing.B) {
	p, _ := benchSession(b)
	st, err := os.Stat(p)
	require.NoError(b, err)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(p)
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, f)
		f.Close()
		require.NoError(b, err)
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

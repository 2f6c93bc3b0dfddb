// Package searchtest makes stores of synthetic Claude conversations for search's benchmarks: many sessions, many
// conversations of realistic shape (prompts, replies, tool calls with large results, the metadata of each line),
// their words drawn from a Zipf-distributed vocabulary, quickly.
package searchtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Needle is a word said in Needles conversations of a store Make made, NeedleQuery a phrase of one of them.
const (
	Needle      = "xylophonic"
	Needles     = 3
	NeedleQuery = `"` + Needle + " quartz\""
)

// Store describes what Make made.
type Store struct {
	Sessions, Conversations int
	Bytes                   int64  // of transcripts
	Common                  string // a word of the vocabulary's most frequent
}

// Make lays out convs conversations of about size bytes each, perSession a session, in a store at root (made as
// the store is: sessions/<id>/.claude/projects/-session-workspace/<uuid>.jsonl). Set-up, not measured: no fsync.
func Make(root string, convs, perSession, size int) (Store, error) {
	st := Store{Conversations: convs}
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := vocabulary(rng, 20000)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, uint64(len(vocab)-1))
	st.Common = vocab[0]
	words := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[zipf.Uint64()])
		}
		return b.String()
	}
	needles := map[int]bool{}
	for i := range Needles {
		needles[(i*convs)/Needles+convs/(2*Needles)] = true
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for c := 0; c < convs; c++ {
		s := c / perSession
		id := fmt.Sprintf("search%05d", s)
		dir := filepath.Join(root, "sessions", id, ".claude", "projects", "-session-workspace")
		if c%perSession == 0 {
			st.Sessions++
			for _, d := range []string{dir, filepath.Join(root, "sessions", id, "workspace"), filepath.Join(root, "sessions", id, "app"), filepath.Join(root, "sessions", id, "mcps")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return st, err
				}
			}
			meta := fmt.Sprintf(`{"id":%q,"created":"2026-01-01T00:00:00Z"}`+"\n", id)
			if err := os.WriteFile(filepath.Join(root, "sessions", id, "session.json"), []byte(meta), 0o644); err != nil {
				return st, err
			}
		}
		uuid := fmt.Sprintf("5ea4c400-0000-4000-8000-%012d", c)
		f, err := os.Create(filepath.Join(dir, uuid+".jsonl"))
		if err != nil {
			return st, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		var n int64
		t := start.Add(time.Duration(c) * time.Minute)
		line := func(v map[string]any) {
			v["sessionId"], v["cwd"], v["version"], v["gitBranch"] = uuid, "/session/workspace", "2.1.197", "main"
			v["uuid"] = fmt.Sprintf("%08x-0000-4000-8000-%012d", rng.Uint32(), n)
			v["timestamp"] = t.Format(time.RFC3339Nano)
			t = t.Add(3 * time.Second)
			b, _ := json.Marshal(v)
			w.Write(b)
			w.WriteByte('\n')
			n += int64(len(b)) + 1
		}
		for turn := 0; n < int64(size); turn++ {
			prompt := words(20 + rng.IntN(40))
			if needles[c] && turn == 0 {
				prompt += " " + Needle + " quartz"
			}
			line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
			call := fmt.Sprintf("toolu_%d_%d", c, turn)
			line(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": words(60 + rng.IntN(120))},
				map[string]any{"type": "tool_use", "id": call, "name": "Bash",
					"input": map[string]any{"command": "grep -rn " + words(2) + " src/", "description": words(6)}}}}})
			line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": call, "content": words(400 + rng.IntN(400))}}}})
			line(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": words(30 + rng.IntN(80))}}}})
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return st, err
		}
		if err := f.Close(); err != nil {
			return st, err
		}
		st.Bytes += n
	}
	return st, os.MkdirAll(filepath.Join(root, "trash"), 0o755)
}

// vocabulary is n distinct pronounceable words.
func vocabulary(rng *rand.Rand, n int) []string {
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

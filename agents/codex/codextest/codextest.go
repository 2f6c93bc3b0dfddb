// Package codextest writes Codex rollouts in the shapes Codex 0.171.0 keeps them in, for tests: plain, a reverted
// thread's later rollouts, archived, compressed (as its compression worker does: one zstd frame of level 3, its
// size in its header), and hostile zstd.
package codextest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// Name is a rollout's file name: rollout-<time>-<thread>.jsonl, or a reverted thread's later one's,
// rollout-<time>-<thread>_<rollout>.jsonl.
func Name(at time.Time, thread, rollout string) string {
	name := "rollout-" + at.UTC().Format("2006-01-02T15-04-05") + "-" + thread
	if rollout != "" {
		name += "_" + rollout
	}
	return name + ".jsonl"
}

// Dated is where Codex files a rollout of a thread begun at at: sessions/YYYY/MM/DD/<name>.
func Dated(at time.Time, name string) string {
	return filepath.Join("sessions", at.UTC().Format("2006/01/02"), name)
}

// Rollout is a rollout's lines as Codex 0.171.0 writes them: its session_meta (a later rollout of a reverted
// thread names the prefix it goes on from: reverted), Codex's own context (the first rollout only), then a
// prompt and the stub's reply for each prompt, a second apart from at.
func Rollout(thread, cwd string, at time.Time, reverted bool, prompts ...string) []byte {
	var out []byte
	n := 0
	add := func(typ string, payload map[string]any) {
		b, err := json.Marshal(map[string]any{"timestamp": at.Add(time.Duration(n) * time.Millisecond).UTC().Format(time.RFC3339Nano),
			"ordinal": n, "type": typ, "payload": payload})
		if err != nil {
			panic(err)
		}
		out, n = append(append(out, b...), '\n'), n+1
	}
	meta := map[string]any{"id": thread, "session_id": thread, "cwd": cwd, "cli_version": "0.171.0", "history_mode": "paginated"}
	if reverted {
		meta["history_base"] = map[string]any{"thread_id": thread, "end_ordinal_exclusive": 2, "end_byte_offset": 100}
	}
	add("session_meta", meta)
	msg := func(role, kind, text string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}
	}
	if !reverted {
		add("response_item", msg("user", "input_text", "<environment_context>\n  <cwd>"+cwd+"</cwd>\n</environment_context>"))
	}
	for _, p := range prompts {
		at = at.Add(time.Second)
		add("turn_context", map[string]any{"cwd": cwd})
		add("response_item", msg("user", "input_text", p))
		add("response_item", msg("assistant", "output_text", "stub reply"))
	}
	return out
}

// Write writes data at rel beneath root, its folders made, and returns its path.
func Write(t testing.TB, root, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// Compress is data as Codex's worker compresses a rollout: one frame, its size in its header.
func Compress(t testing.TB, data []byte) []byte {
	t.Helper()
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	defer zw.Close()
	return zw.EncodeAll(data, nil)
}

// Bomb is a zstd frame of blocks RLE blocks of 128 KiB of b each: four bytes a block, no size in its header.
func Bomb(blocks int, b byte) []byte {
	out := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	out = append(out, 0x00, 0x50) // no size, no checksum, one segment no; a window of 1 MiB
	for i := range blocks {
		h := uint32(128<<10)<<3 | 1<<1 // RLE, 128 KiB
		if i == blocks-1 {
			h |= 1 // the last
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), b)
	}
	return out
}

// Window is a frame whose header claims a window of 1<<log bytes, with one raw block of data after it.
func Window(log int, data []byte) []byte {
	out := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	out = append(out, 0x00, byte(log-10)<<3)
	h := uint32(len(data))<<3 | 1 // raw, the last
	return append(append(out, byte(h), byte(h>>8), byte(h>>16)), data...)
}

// Thread is a uuid of thread or rollout n, as Codex makes them (version 7).
func Thread(n int) string { return fmt.Sprintf("01a236e9-%04x-7000-8000-%012x", n, n) }

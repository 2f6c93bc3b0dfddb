// Package openaistub is a small stand-in for OpenAI's HTTP API, enough for Qwen Code (chat completions) and the
// Codex CLI (responses) to complete turns offline and write their real session files: every turn is answered
// with one plain text message, streamed when the client asks for it.
package openaistub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/e2e/internal/stubserver"
)

// Reply is the text of every answer.
const Reply = "stub reply"

// Server is a running stub. Requests counts the model calls it answered; URL ends in /v1.
type Server = stubserver.Server

// Start listens on addr ("127.0.0.1:0" for the loopback).
func Start(addr string) (*Server, error) { return stubserver.Start(addr, "/v1", serve) }

func serve(s *Server, w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"stub-model","object":"model","created":0,"owned_by":"stub"}],"models":[]}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		_ = json.NewDecoder(r.Body).Decode(&req)
		s.Requests.Add(1)
		chat(w, req.Model, req.Stream)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		_ = json.NewDecoder(r.Body).Decode(&req)
		s.Requests.Add(1)
		responses(w, req.Model)
	default:
		http.NotFound(w, r)
	}
}

func usage() map[string]int {
	return map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}

// chat answers a chat completion, as one JSON object or as server-sent chunks ending in [DONE].
func chat(w http.ResponseWriter, model string, stream bool) {
	id, created := "chatcmpl-stub", time.Now().Unix()
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": Reply}}},
			"usage": usage(),
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, u any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": u,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	chunk(map[string]any{"content": Reply}, nil, nil)
	chunk(map[string]any{}, "stop", usage())
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// responses answers a Responses API call with the event stream of one output message.
func responses(w http.ResponseWriter, model string) {
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	send := func(event string, data map[string]any) {
		data["type"] = event
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	now := time.Now().Unix()
	item := func(text, status string) map[string]any {
		content := []any{}
		if status == "completed" {
			content = append(content, map[string]any{"type": "output_text", "text": text, "annotations": []any{}})
		}
		return map[string]any{"id": "msg_stub", "type": "message", "role": "assistant", "status": status, "content": content}
	}
	resp := func(status string, output []any) map[string]any {
		r := map[string]any{"id": "resp_stub", "object": "response", "created_at": now, "status": status,
			"model": model, "output": output}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
				"input_tokens_details":  map[string]int{"cached_tokens": 0},
				"output_tokens_details": map[string]int{"reasoning_tokens": 0}}
		}
		return r
	}
	send("response.created", map[string]any{"response": resp("in_progress", []any{})})
	send("response.output_item.added", map[string]any{"output_index": 0, "item": item("", "in_progress")})
	send("response.content_part.added", map[string]any{"item_id": "msg_stub", "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	send("response.output_text.delta", map[string]any{"item_id": "msg_stub", "output_index": 0, "content_index": 0, "delta": Reply})
	send("response.output_text.done", map[string]any{"item_id": "msg_stub", "output_index": 0, "content_index": 0, "text": Reply})
	send("response.content_part.done", map[string]any{"item_id": "msg_stub", "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": Reply, "annotations": []any{}}})
	done := item(Reply, "completed")
	send("response.output_item.done", map[string]any{"output_index": 0, "item": done})
	send("response.completed", map[string]any{"response": resp("completed", []any{done})})
}

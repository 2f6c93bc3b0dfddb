// Package apistub is a small stand-in for Anthropic's Messages API, enough for the real claude CLI to complete
// turns offline and write real transcripts: a plain text turn, and a turn that calls the Agent tool so a subagent
// transcript is written too.
package apistub

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// AgentTrigger in a prompt makes the stub answer with a call of the Agent (or Task) tool.
const AgentTrigger = "DELEGATE-TO-SUBAGENT"

// Reply is the text of every plain answer.
const Reply = "stub reply"

// Server is a running stub. Requests counts POSTs to /v1/messages.
type Server struct {
	URL      string
	Requests atomic.Int64
	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	next     int
	seen     string // the messages of the last request, as sent
}

// LastMessages is what the last request sent as its conversation: each message's content as JSON, one per line
// (a resumed conversation sends every turn the CLI found).
func (s *Server) LastMessages() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// Start listens on addr ("127.0.0.1:0" for the loopback; "0.0.0.0:0" so containers can reach it).
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Port is the port the stub listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Close stops the stub.
func (s *Server) Close() error { return s.srv.Close() }

type request struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		w.WriteHeader(http.StatusOK) // HEAD / connectivity check, and anything else
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":10}`)
		return
	}
	s.Requests.Add(1)
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var seen strings.Builder
	for _, m := range req.Messages {
		seen.Write(m.Content)
		seen.WriteByte('\n')
	}
	s.mu.Lock()
	s.seen = seen.String()
	s.mu.Unlock()
	last, hasResult := lastUser(req)
	agentTool := ""
	for _, t := range req.Tools {
		if t.Name == "Agent" || t.Name == "Task" {
			agentTool = t.Name
		}
	}
	var blocks []block
	stop := "end_turn"
	if strings.Contains(last, AgentTrigger) && !hasResult && agentTool != "" {
		input, _ := json.Marshal(map[string]string{
			"description":   "say hello",
			"prompt":        "Reply with one word.",
			"subagent_type": "general-purpose",
		})
		blocks = append(blocks, block{kind: "tool_use", name: agentTool, id: s.toolID(), input: string(input)})
		stop = "tool_use"
	} else {
		blocks = append(blocks, block{kind: "text", text: Reply})
	}
	if !req.Stream {
		writeJSON(w, blocks, stop)
		return
	}
	writeSSE(w, blocks, stop)
}

func (s *Server) toolID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	return fmt.Sprintf("toolu_stub%04d", s.next)
}

// lastUser returns the text of the last user message and whether it carries a tool result.
func lastUser(req request) (text string, toolResult bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s, false
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "tool_result" {
				toolResult = true
			}
			b.WriteString(p.Text)
		}
		return b.String(), toolResult
	}
	return "", false
}

type block struct {
	kind, text, name, id, input string
}

func usage() map[string]int { return map[string]int{"input_tokens": 10, "output_tokens": 5} }

func message(content []any, stop any) map[string]any {
	return map[string]any{
		"id": "msg_stub", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage(),
	}
}

func writeJSON(w http.ResponseWriter, blocks []block, stop string) {
	var content []any
	for _, b := range blocks {
		if b.kind == "text" {
			content = append(content, map[string]any{"type": "text", "text": b.text})
		} else {
			content = append(content, map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": json.RawMessage(b.input)})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(message(content, stop))
}

// writeSSE sends the standard event sequence of a streamed message.
func writeSSE(w http.ResponseWriter, blocks []block, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": message([]any{}, nil)})
	for i, b := range blocks {
		if b.kind == "text" {
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.text}})
		} else {
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": b.input}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

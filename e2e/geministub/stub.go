// Package geministub is a small stand-in for Google's Gemini API (generativelanguage v1beta), enough for the
// Gemini CLI to complete turns offline and write its real chat files: every generateContent call is answered
// with one plain text candidate, streamed as server-sent events when the client asks for it.
package geministub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sessionfs/sessionfs/e2e/internal/stubserver"
)

// Reply is the text of every answer.
const Reply = "stub reply"

// Server is a running stub. Requests counts the generateContent calls it answered.
type Server = stubserver.Server

// Start listens on addr ("127.0.0.1:0" for the loopback).
func Start(addr string) (*Server, error) { return stubserver.Start(addr, "", serve) }

func serve(s *Server, w http.ResponseWriter, r *http.Request) {
	_, method, _ := strings.Cut(r.URL.Path, ":")
	switch {
	case r.Method != http.MethodPost:
		http.NotFound(w, r)
	case method == "countTokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"totalTokens":10}`)
	case method == "generateContent":
		s.Requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(response(r))
	case method == "streamGenerateContent":
		s.Requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(response(r))
		fmt.Fprintf(w, "data: %s\n\n", b)
	default:
		http.NotFound(w, r)
	}
}

// response is one finished candidate. A request for JSON output (the CLI's own classifiers) gets an empty
// object, which they read as "no opinion".
func response(r *http.Request) map[string]any {
	var req struct {
		GenerationConfig struct {
			ResponseMIMEType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	text := Reply
	if req.GenerationConfig.ResponseMIMEType == "application/json" {
		text = "{}"
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "stub-model",
	}
}

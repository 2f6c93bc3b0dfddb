package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/agents"
	_ "github.com/sessionfs/sessionfs/agents/all" // the index counts conversations
	"github.com/sessionfs/sessionfs/layout"
)

const testToken = "0123456789abcdef0123456789abcdef"

// testServer serves store st on a real listener; its client carries the cookie (after login).
type testServer struct {
	*Server
	ts     *httptest.Server
	client *http.Client
}

func serve(t testing.TB, st *layout.Store) *testServer {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	s, err := New(Options{Store: st, Addr: ts.Listener.Addr().String(), Token: testToken, Command: "sessionfs"})
	require.NoError(t, err)
	ts.Config.Handler = s
	ts.Start()
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(ts.URL + "/?token=" + testToken)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return &testServer{Server: s, ts: ts, client: c}
}

// get fetches path with the cookie, returning the answer and its body.
func (s *testServer) get(t testing.TB, path string) (*http.Response, string) {
	t.Helper()
	resp, err := s.client.Get(s.ts.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// newStore is an empty store in a temporary folder.
func newStore(t testing.TB) *layout.Store {
	t.Helper()
	root := t.TempDir()
	st, err := layout.OpenStore(root)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// newSession makes session id in st and returns its folder.
func newSession(t testing.TB, st *layout.Store, id string, labels map[string]string) string {
	t.Helper()
	_, err := st.Create(id, layout.CreateOptions{Labels: labels})
	require.NoError(t, err)
	return st.Dir(id)
}

// transcript is a Claude conversation's file in session folder dir (made if missing).
func transcript(t testing.TB, dir, uuid string) string {
	t.Helper()
	p := filepath.Join(dir, ".claude", "projects", layout.CanonicalProject)
	require.NoError(t, os.MkdirAll(p, 0o755))
	return filepath.Join(p, uuid+".jsonl")
}

// claudeLine is one line of a Claude transcript: a prompt (role user) or a reply (assistant) saying text.
func claudeLine(uuid, role, text string, n int) string {
	typ := "user"
	content := any(text)
	if role == "assistant" {
		typ = "assistant"
		content = []any{map[string]any{"type": "text", "text": text}}
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "sessionId": uuid, "cwd": "/session/workspace",
		"uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", n), "timestamp": time.Date(2026, 11, 26, 1, 0, n, 0, time.UTC).Format(time.RFC3339Nano),
		"message": map[string]any{"role": role, "content": content}})
	return string(b) + "\n"
}

// appendFile appends s to file p.
func appendFile(t testing.TB, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// entryCount is how many entries a conversation page shows.
func entryCount(body string) int { return strings.Count(body, `class="entry `) }

func convOf(agent, id string) agents.Conversation { return agents.Conversation{Agent: agent, ID: id} }

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/sessionfs/sessionfs/e2e/apistub"
	"github.com/sessionfs/sessionfs/e2e/openaistub"
)

// TestWatch: watch prints each new message of a session as one readable line, subagents marked.
func TestWatch(t *testing.T) {
	forEachClaude(t, func(t *testing.T, c claudeCLI) {
		claude := c.path
		api := stub(t, "127.0.0.1:0")
		store := t.TempDir()
		ok(t, store, "new", "s1")
		for _, asJSON := range []bool{false, true} {
			args := []string{"watch", "s1"}
			if asJSON {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
			pr, pw := io.Pipe()
			cmd.Stdout = pw
			require.NoError(t, cmd.Start())
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			waitWatching(t, cmd.Process.Pid)
			p := filepath.Join(store, "sessions", "s1")
			out, err := claudeRun(t, claude, api.URL, filepath.Join(p, ".claude"), filepath.Join(p, "workspace"), "-p", "watch me "+apistub.AgentTrigger)
			require.NoError(t, err, out)
			var seen []string
			deadline := time.After(10 * time.Second)
		collect:
			for {
				select {
				case l := <-lines:
					seen = append(seen, l)
					all := strings.Join(seen, "\n")
					if strings.Contains(all, "[agent-") && strings.Contains(all, "assistant "+apistub.Reply) && strings.Count(all, apistub.Reply) >= 2 ||
						asJSON && len(seen) >= 6 {
						break collect
					}
				case <-deadline:
					break collect
				}
			}
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			pw.Close()
			all := strings.Join(seen, "\n")
			if asJSON {
				require.NotEmpty(t, seen)
				for _, l := range seen {
					assert.True(t, json.Valid([]byte(l)), "%q", l)
				}
				continue
			}
			assert.Regexp(t, `(?m)^[0-9a-f]{8} (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d user\s+watch me`, all) // a date only across midnight
			assert.Contains(t, all, "→ Agent(")
			assert.Contains(t, all, "[agent-", "subagent messages are marked")
			assert.Contains(t, all, "assistant "+apistub.Reply)
		}
	})
}

// A conversation can be read, not only followed: watch --from-start prints what the transcripts hold, and with
// --no-follow exits after. Defect 9 of issue 40: the session's conversations come interleaved by time (they came
// conversation by conversation), and a message of another day carries its date (it had the clock alone).
func TestWatchReadsAConversation(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	canon := filepath.Join(store, "sessions", "s1", ".claude", "projects", "-session-workspace")
	entry := func(at time.Time, text string) string {
		return fmt.Sprintf(`{"type":"user","timestamp":%q,"message":{"role":"user","content":%q}}`+"\n", at.UTC().Format(time.RFC3339), text)
	}
	old := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	today := time.Now()
	require.NoError(t, os.WriteFile(filepath.Join(canon, "2fe2d21b-be8f-4b12-b46b-12e68f6e9f01.jsonl"),
		[]byte(entry(old, "hello there")+entry(today, "and today")), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(canon, "7c0ffee0-be8f-4b12-b46b-12e68f6e9f02.jsonl"),
		[]byte(entry(old.Add(time.Hour), "the other one")), 0o600))
	out := ok(t, store, "watch", "s1", "--no-follow")
	assert.Regexp(t, `^2fe2d21b `+old.Local().Format("2006-01-02 15:04:05")+` user +hello there\n`+
		`7c0ffee0 `+old.Add(time.Hour).Local().Format("2006-01-02 15:04:05")+` user +the other one\n`+
		`2fe2d21b `+today.Local().Format("15:04:05")+` user +and today\n$`, out)
}

// TestWatchOtherAgents: watch follows the other agents' conversations too, their folders made after it started,
// each message one line marked with its agent. The files are the ones the pinned CLIs wrote (agents/testdata),
// appended a line at a time as the CLIs append them.
func TestWatchOtherAgents(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "s1")
	sess := filepath.Join(store, "sessions", "s1")
	cmd := exec.Command(bin, "watch", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var out strings.Builder
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = pw
	require.NoError(t, cmd.Start())
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := make(chan string, 100)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				got <- string(b[:n])
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	waitWatching(t, cmd.Process.Pid)

	src := filepath.Join("..", "agents", "testdata", "session")
	for _, glob := range []string{".codex/sessions/*/*/*/*.jsonl", ".gemini/tmp/*/chats/session-2026-11-23T07-00-*.jsonl", ".qwen/projects/*/chats/*.jsonl"} {
		files, err := filepath.Glob(filepath.Join(src, glob))
		require.NoError(t, err)
		require.Len(t, files, 1, glob)
		rel, err := filepath.Rel(src, files[0])
		require.NoError(t, err)
		dst := filepath.Join(sess, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		time.Sleep(200 * time.Millisecond)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(t, err)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			_, err := f.WriteString(line)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	at := `(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d` // the files' messages are of 2026-11-23: dated on another day
	want := []string{`(?m)^01a20739 ` + at + ` \[codex\] user hello there$`, `(?m)^01a20739 ` + at + ` \[codex\] assistant stub reply$`,
		`(?m)^9ab916a9 ` + at + ` \[gemini\] user hello there$`, `(?m)^9ab916a9 ` + at + ` \[gemini\] assistant stub reply$`,
		`(?m)^6ff0322b ` + at + ` \[qwen\] user hello there$`, `(?m)^6ff0322b ` + at + ` \[qwen\] assistant stub reply$`}
	deadline := time.After(10 * time.Second)
	done := func() bool {
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case s, open := <-got:
			require.True(t, open, "watch ended:\n%s", out.String())
			out.WriteString(s)
		case <-deadline:
			t.Fatalf("watch printed:\n%s", out.String())
		}
	}
	for settle := time.After(500 * time.Millisecond); ; { // anything more it would print
		select {
		case s := <-got:
			out.WriteString(s)
			continue
		case <-settle:
		}
		break
	}
	assert.NotContains(t, out.String(), "session_context", "the context the agents add is not a message")
	assert.NotContains(t, out.String(), "environment_context")
	assert.Equal(t, 10, strings.Count(out.String(), "\n"), "one line per message, Gemini's history rewrite not repeated:\n%s", out.String())
}

// TestOpencodeWatch: "sessionfs watch" follows the conversation opencode keeps in its database as the real CLI
// writes it: the prompt and the reply, each once, marked [opencode] under the short id find takes.
func TestOpencodeWatch(t *testing.T) {
	oc := agentCLI(t, "opencode")
	store, _, api, env := opencodeSetup(t)
	cmd := exec.Command(bin, "watch", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	out := &syncBuffer{}
	cmd.Stdout = out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitWatching(t, cmd.Process.Pid)
	time.Sleep(time.Second) // and its first read of the database's rows, which new rows follow, is done

	r := agentExec(t, store, "opencode", env, "", oc, "run", "--format", "json", "hello watcher")
	require.Equal(t, 0, r.code, "%s\n%s\nstub saw %v", r.stdout, r.stderr, api.Paths())
	ids := opencodeIDs(r.stdout)
	require.Len(t, ids, 1)
	short := strings.TrimPrefix(ids[0], "ses_")[:8]
	stamp := ` (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d` // a date only across midnight
	prompt := regexp.MustCompile(`(?m)^` + short + stamp + ` \[opencode\] user "hello watcher"$`)
	reply := regexp.MustCompile(`(?m)^` + short + stamp + ` \[opencode\] assistant ` + openaistub.Reply + `$`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !(prompt.MatchString(out.String()) && reply.MatchString(out.String())) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // nothing printed twice meanwhile
	assert.Len(t, prompt.FindAllString(out.String(), -1), 1, out.String())
	assert.Len(t, reply.FindAllString(out.String(), -1), 1, out.String())

	// The short id is one find takes.
	session, agent := findAgent(t, store, short)
	assert.Equal(t, "s1/opencode", session+"/"+agent)
}

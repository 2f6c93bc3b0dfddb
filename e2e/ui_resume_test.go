package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestUIResumeCommandWorks: the host command #resume shows for a conversation the real Claude CLI had, pasted into
// sh -c in another folder and shell (claude on its PATH, no SESSIONFS_STORE), resumes that conversation. A
// conversation whose name is written to inject commands into the shell it is pasted in comes out of every command
// shown as one word, nothing run.
func TestUIResumeCommandWorks(t *testing.T) {
	claude := claudeBin(t)
	chromiumPath(t)
	store, api := claudeSetup(t)
	env := claudeEnv(t, api.URL)
	r := cliIn(t, store, "", env, "exec", "s1", "--", claude, "-p", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	var files []string
	for _, dir := range glob(t, filepath.Join(store, "sessions", "s1", ".claude", "projects", "*")) {
		files = append(files, transcripts(t, dir)...)
	}
	require.Len(t, files, 1)
	uuid := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	const injected = `x'$(touch pwned-dollar)'";touch pwned-semicolon;"` + "`touch pwned-backtick`" + ` & touch pwned-amp #`
	writeTranscript(t, store, "s1", injected, promptLine(t, "a conversation named to inject"), replyLine(t, "ok"))

	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)
	b.visit(t, u, "/s/s1")
	lines := eval[[]string](t, b, `[...document.querySelectorAll('#resume code')].map(c => c.innerText)`)
	t.Logf("#resume: %q", lines)
	var host []string
	for _, l := range lines {
		if strings.Contains(l, " resume s1 "+uuid) && !strings.Contains(l, "--backend") {
			host = append(host, l)
		}
	}
	require.Len(t, host, 1, "one host command resumes the conversation: %q", lines)

	path := t.TempDir() // the user's PATH: claude, and sessionfs when the page names it so
	require.NoError(t, os.Symlink(claude, filepath.Join(path, "claude")))
	require.NoError(t, os.Symlink(bin, filepath.Join(path, "sessionfs")))
	n := lineCount(t, files[0])
	paste := exec.Command("sh", "-c", host[0]+" -- -p 'pasted from the ui'")
	paste.Dir = t.TempDir()
	paste.Env = append(env, "PATH="+path+":"+os.Getenv("PATH"), "SESSIONFS_STORE=")
	out, err := paste.CombinedOutput()
	require.NoError(t, err, "%s: %s", host[0], out)
	assert.Contains(t, string(out), apistub.Reply)
	assert.Greater(t, lineCount(t, files[0]), n, "the pasted command resumed the conversation")

	// Each command shown for the injecting conversation, its words printed by the shell it is pasted in.
	var shown int
	for _, l := range lines {
		if !strings.Contains(l, "touch") {
			continue
		}
		shown++
		dir := t.TempDir()
		words := sh(t, dir, "printf '%s\\n' "+l)
		assert.Contains(t, strings.Split(words, "\n"), injected, "the conversation is one word of %s", l)
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, ents, "pasting %s ran a command", l)
	}
	assert.Positive(t, shown, "the injecting conversation has resume commands: %q", lines)
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/e2e/apistub"
)

// TestUIListsSessions: sessions made by new, by import (of what the real Claude CLI wrote) and by a real Claude
// CLI run in one are rows of #sessions; a conversation reached from the list by links shows its prompt and the
// reply. The screenshots of the list and of the conversation are kept (README's, with
// SESSIONFS_UPDATE_SCREENSHOTS=1).
func TestUIListsSessions(t *testing.T) {
	claude := claudeBin(t)
	chromiumPath(t)
	api := stub(t, "127.0.0.1:0")
	store := t.TempDir()
	ok(t, store, "new", "fix-login", "--label", "team=web", "--label", "stage=review")

	claudeDir := filepath.Join(t.TempDir(), ".claude")
	out, err := claudeRun(t, claude, api.URL, claudeDir, t.TempDir(), "-p", "summarize the imported notes")
	require.NoError(t, err, out)
	ok(t, store, "import", "--from", claudeDir)
	imported := uuidsIn(t, claudeDir)
	require.Len(t, imported, 1)

	ok(t, store, "new", "refactor-api", "--label", "team=api")
	const prompt = "rename the handlers of the api package"
	r := cliIn(t, store, "", claudeEnv(t, api.URL), "exec", "refactor-api", "--", claude, "-p", prompt)
	require.Equal(t, 0, r.code, r.stderr)

	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)
	for _, id := range []string{"fix-login", imported[0], "refactor-api"} {
		b.do(t, chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-session="`+id+`"]`)))
	}
	row := eval[string](t, b, `document.querySelector('#sessions tr[data-session="refactor-api"]').innerText`)
	assert.Contains(t, row, "claude", "the row names the agent of its conversation: %q", row)
	assert.Contains(t, row, "team=api", "the row shows the labels: %q", row)
	b.screenshot(t, "ui-sessions.png")

	b.do(t, chromedp.Click(chromedp.CSS(`#sessions tr[data-session="refactor-api"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#conversations a`)),
		chromedp.Click(chromedp.CSS(`#conversations a`)),
		chromedp.WaitVisible(chromedp.CSS(`#conversation .entry`)))
	prompts := eval[string](t, b, `[...document.querySelectorAll('#conversation .entry.prompt')].map(e => e.innerText).join('\n')`)
	replies := eval[string](t, b, `[...document.querySelectorAll('#conversation .entry.reply')].map(e => e.innerText).join('\n')`)
	assert.Contains(t, prompts, prompt)
	assert.Contains(t, replies, apistub.Reply)
	b.screenshot(t, "ui-conversation.png")

	b.visit(t, u, "/s/"+imported[0])
	b.do(t, chromedp.Click(chromedp.CSS(`#conversations a`)), chromedp.WaitVisible(chromedp.CSS(`#conversation .entry.prompt`)))
	assert.Contains(t, b.text(t), "summarize the imported notes", "the imported conversation's page")
}

// TestUILiveAppend: a line the agent appends to the conversation open in the browser shows in the page within a
// second (the bound); a session made meanwhile appears in the open list, and a run in it shows running
// and then its exit code, neither page reloaded.
func TestUILiveAppend(t *testing.T) {
	chromiumPath(t)
	store := t.TempDir()
	ok(t, store, "new", "s1")
	const uuid = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	conv := writeTranscript(t, store, "s1", uuid, promptLine(t, "first question"), replyLine(t, "first answer"))
	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)

	b.visit(t, u, "/s/s1/c/claude/"+uuid)
	b.do(t, chromedp.WaitVisible(chromedp.CSS(`#conversation .entry.reply`)))
	// The second counts from the page's stream being open: a loaded machine's slow start of it is not the bound's.
	b.do(t, chromedp.WaitReady(chromedp.CSS(`#conversation[data-stream="open"]`)))
	eval[chromedp.Void](t, b, `window.uitestNotReloaded = true`)
	const needle = "appended while the page was open"
	appended := `//*[@id="conversation"]//*[contains(concat(" ", normalize-space(@class), " "), " entry ")][contains(., "` + needle + `")]`
	within, cancelWithin := context.WithTimeout(b.ctx, time.Second)
	defer cancelWithin()
	start := time.Now()
	require.NoError(t, appendLine(conv, replyLine(t, needle)))
	require.NoError(t, chromedp.Do(within, chromedp.WaitVisible(appended)), "the appended line is not in the open page within 1 s")
	t.Logf("the appended line showed after %v", time.Since(start).Round(time.Millisecond))
	assert.True(t, eval[bool](t, b, `window.uitestNotReloaded === true`), "the page was reloaded")
	last := eval[string](t, b, `[...document.querySelectorAll('#conversation .entry')].pop().id`)
	assert.Equal(t, "e3", last, "the appended entry is the third, after the two the page had")

	b.visit(t, u, "/")
	b.do(t, chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-session="s1"]`)))
	eval[chromedp.Void](t, b, `window.uitestNotReloaded = true`)
	ok(t, store, "new", "made-later")
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-session="made-later"]`))),
		"the new session is not in the open list")
	assert.True(t, eval[bool](t, b, `window.uitestNotReloaded === true`), "the list was reloaded")
	assert.NotEmpty(t, strings.TrimSpace(eval[string](t, b, `document.querySelector('#sessions tr[data-session="made-later"]').innerText`)))

	// A run: shown running while it runs (cat, until its stdin closes), then its exit code.
	run := exec.Command(bin, "exec", "made-later", "--", "sh", "-c", "cat >/dev/null; exit 3")
	run.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	stdin, err := run.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	t.Cleanup(func() { _ = run.Process.Kill(); _ = run.Wait() })
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#sessions tr.running[data-session="made-later"]`))),
		"the run is not shown running in the open list")
	require.NoError(t, stdin.Close())
	require.Error(t, run.Wait(), "the run exits 3")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`#sessions tr.running[data-session="made-later"]`))),
		"the ended run is still shown running")
	lastExit := eval[string](t, b, `document.querySelector('#sessions tr[data-session="made-later"] td:last-child').innerText`)
	assert.Equal(t, "3", strings.TrimSpace(lastExit), "the row shows the run's exit code")
	assert.True(t, eval[bool](t, b, `window.uitestNotReloaded === true`), "the list was reloaded")
}

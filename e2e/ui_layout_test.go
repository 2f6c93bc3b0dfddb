package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUIPhoneDarkAndKeyboard: the "readable on a phone, a light and a dark theme, keyboard-navigable": at a
// phone's width no page scrolls sideways (a long unbroken line of a conversation included); with the system's
// dark preference the page is dark; a session is reached from the list by Tab and Enter alone.
func TestUIPhoneDarkAndKeyboard(t *testing.T) {
	chromiumPath(t)
	store := t.TempDir()
	ok(t, store, "new", "a-session-with-a-rather-long-name-for-a-phone", "--label", "team=web", "--label", "stage=review")
	const uuid = "3c2b1a09-8f7e-4d6c-9b5a-493827161504"
	writeTranscript(t, store, "a-session-with-a-rather-long-name-for-a-phone", uuid,
		promptLine(t, "a line without a break: "+strings.Repeat("x", 2000)), replyLine(t, "a short reply"),
		toolLine(t, "toolu_1", "Bash", map[string]any{"command": "ls " + strings.Repeat("/very/long/path", 100)}))
	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)

	pages := []string{"/", "/s/a-session-with-a-rather-long-name-for-a-phone",
		"/s/a-session-with-a-rather-long-name-for-a-phone/c/claude/" + uuid, "/s/a-session-with-a-rather-long-name-for-a-phone/w/", "/search?q=reply"}
	b.do(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, p := range pages {
		b.visit(t, u, p)
		w := eval[[]int](t, b, `[document.documentElement.scrollWidth, window.innerWidth]`)
		assert.LessOrEqual(t, w[0], w[1], "%s scrolls sideways at a phone's width (%d px wide in %d)", p, w[0], w[1])
	}
	b.do(t, chromedp.EmulateReset())

	background := func() string {
		return eval[string](t, b, `getComputedStyle(document.body).backgroundColor`)
	}
	b.visit(t, u, "/")
	light := background()
	setScheme := func(scheme string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		})
	}
	b.do(t, setScheme("dark"))
	dark := background()
	b.do(t, setScheme("light"))
	t.Logf("background: light %s, dark %s", light, dark)
	assert.NotEqual(t, light, dark, "the dark preference changes the page")
	assert.Less(t, luminance(t, dark), luminance(t, light), "the dark theme is darker")

	b.visit(t, u, "/")
	var reached string
	for range 60 {
		b.do(t, chromedp.KeyEvent(kb.Tab))
		reached = eval[string](t, b, `document.activeElement && document.activeElement.matches('#sessions a') ? document.activeElement.getAttribute('href') : ''`)
		if reached != "" {
			break
		}
	}
	require.NotEmpty(t, reached, "Tab never reached a session's link in 60 presses")
	b.do(t, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`#resume`)))
	assert.Equal(t, reached, eval[string](t, b, `location.pathname`), "Enter on the link opened the session")
}

// luminance is the sum of the red, green and blue of a CSS rgb() or rgba() color.
func luminance(t *testing.T, color string) int {
	t.Helper()
	nums := regexp.MustCompile(`[0-9]+`).FindAllString(color, 3)
	require.Len(t, nums, 3, "a color: %q", color)
	sum := 0
	for _, n := range nums {
		v, err := strconv.Atoi(n)
		require.NoError(t, err)
		sum += v
	}
	return sum
}

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperDevServer is a session's dev server (run as uid 65534): it listens on 127.0.0.1 (a free port, printed),
// and for each request prints the cookies the browser sent, then replays each of them to sessionfs ui
// (HELPER_UI, its base URL) and prints "replay NAME STATUS" and whether the answer named HELPER_VICTIM.
func helperDevServer() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "dev server:", err)
		return 1
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	victim := os.Getenv("HELPER_VICTIM")
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("request %s cookies %d\n", r.URL.Path, len(r.Cookies()))
		for _, c := range r.Cookies() {
			req, _ := http.NewRequest(http.MethodGet, os.Getenv("HELPER_UI")+"/", nil)
			req.AddCookie(c)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				fmt.Printf("replay %s error\n", c.Name)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("replay %s %d victim-shown=%v\n", c.Name, resp.StatusCode, strings.Contains(string(b), victim))
		}
		fmt.Println("done")
		_, _ = io.WriteString(w, "<!doctype html><title>dev server</title><p>hello from the agent's app</p>")
	}))
	return 1
}

// TestAttackUICookieToSessionDevServer: a person opens sessionfs ui (its token traded for a cookie), then, in the
// same browser, the page of a dev server an agent started on 127.0.0.1 (a session's process, uid 65534, run by
// the local backend on the host's network). Browsers send a host's cookies to every port of it (RFC 6265 cookies
// know no port, SameSite neither: 127.0.0.1:3000 is the same site as the ui), so whatever the ui's credential is,
// it must not be one the dev server receives and can replay: that would open every session of the store to one
// session's process (another local user's server on 127.0.0.1 alike).
func TestAttackUICookieToSessionDevServer(t *testing.T) {
	store := t.TempDir()
	ok(t, store, "new", "victim-session")
	ok(t, store, "new", "attacker-session")
	u := startUI(t, store)
	b := newBrowser(t)
	b.login(t, u)
	b.visit(t, u, "/")
	require.Contains(t, b.text(t), "victim-session", "control: the ui lists the other session")

	dev := startAttacker(t, exeForOthers(t), "SESSIONFS_E2E_HELPER=dev-server", "HELPER_UI="+u.base,
		"HELPER_VICTIM=victim-session")
	port := dev.line(t)
	b.do(t, chromedp.Navigate("http://127.0.0.1:"+port+"/"))
	var got []string
	for line := dev.line(t); line != "done"; line = dev.line(t) {
		got = append(got, line)
	}
	t.Logf("the dev server (uid 65534) saw: %q", got)
	require.True(t, strings.HasPrefix(got[0], "request / "), "control: the browser reached the dev server")
	for _, l := range got[1:] {
		assert.NotRegexp(t, `^replay sessionfs_ui\S* 200 `, l, "the dev server replayed the ui's cookie it was sent and was let in")
	}
	// The browser still opens the ui (the fix must not lock the person out).
	b.visit(t, u, "/")
	assert.Contains(t, b.text(t), "victim-session")
}

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The harness of the ui_*_test.go files: `sessionfs ui` on a test's store, and a headless Debian chromium driven
// by chromedp that records what a hostile page could make it do (dialogs, requests to other origins).

// uiServer is a running `sessionfs ui`.
type uiServer struct {
	base, token string       // http://127.0.0.1:PORT/BASE and the token of the URL it printed
	url         string       // the URL as printed
	cookie      *http.Cookie // what the server set for the token
	cmd         *exec.Cmd
	stderr      *syncBuffer
}

// startUI starts `sessionfs ui` on store, reads the URL from the first line of its stdout, and stops it on cleanup
// (SIGINT, as Ctrl-C does; it must exit 0).
func startUI(t *testing.T, store string, extra ...string) *uiServer {
	t.Helper()
	u := &uiServer{stderr: &syncBuffer{}}
	u.cmd = exec.Command(bin, append([]string{"ui"}, extra...)...)
	u.cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	u.cmd.Stderr = u.stderr
	stdout, err := u.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, u.cmd.Start())
	t.Cleanup(func() { u.stop(t) })
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		first <- line
		_, _ = r.WriteTo(discard{}) // the rest of stdout, so the server never blocks on it
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(30 * time.Second):
		t.Fatalf("sessionfs ui printed no URL in 30 s; stderr: %s", u.stderr.String())
	}
	u.url = strings.TrimSpace(line)
	p, err := url.Parse(u.url)
	require.NoError(t, err, "the first line of sessionfs ui is its URL: %q; stderr: %s", line, u.stderr.String())
	require.Equal(t, "http", p.Scheme, "the first line of sessionfs ui is its URL: %q", line)
	u.base = "http://" + p.Host + strings.TrimSuffix(p.Path, "/") // the routes are beneath the URL's path
	u.token = p.Query().Get("token")
	require.NotEmpty(t, u.token, "the URL carries the token: %q", line)
	resp, body := httpGet(t, u.url, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the printed URL trades its token for a cookie: %s", body)
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "sessionfs_ui") {
			u.cookie = c
		}
	}
	require.NotNil(t, u.cookie, "the printed URL sets a cookie: %v", resp.Header)
	return u
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func (u *uiServer) stop(t *testing.T) {
	if u.cmd.Process == nil || u.cmd.ProcessState != nil {
		return
	}
	_ = u.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- u.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sessionfs ui on SIGINT: %v (it exits 0); stderr: %s", err, u.stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = u.cmd.Process.Kill()
		<-done
		t.Errorf("sessionfs ui did not exit within 10 s of SIGINT; stderr: %s", u.stderr.String())
	}
}

// get fetches path with the token's cookie, outside the browser, edit (if any) changing the request first.
func (u *uiServer) get(t *testing.T, path string, edit ...func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	return httpGet(t, u.base+path, func(r *http.Request) {
		r.AddCookie(u.cookie)
		for _, e := range edit {
			e(r)
		}
	})
}

// httpGet fetches raw outside the browser (no redirect followed), edit changing the request first.
func httpGet(t *testing.T, raw string, edit func(*http.Request)) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, raw, nil)
	require.NoError(t, err)
	if edit != nil {
		edit(req)
	}
	c := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err, "GET %s", raw)
	defer resp.Body.Close()
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	require.NoError(t, err, "GET %s", raw)
	return resp, []byte(b.String())
}

// cspReports is the count of Content-Security-Policy violations browsers reported to the server.
func (u *uiServer) cspReports(t *testing.T) int {
	t.Helper()
	resp, body := u.get(t, "/debug/csp-reports")
	require.Equal(t, http.StatusOK, resp.StatusCode, "/debug/csp-reports: %s", body)
	var v struct{ Count *int }
	require.NoError(t, json.Unmarshal(body, &v), "/debug/csp-reports: %s", body)
	require.NotNil(t, v.Count, "/debug/csp-reports has a count: %s", body)
	return *v.Count
}

// browser is a headless chromium of the test's own (its own profile), watched for what a page makes it do.
type browser struct {
	ctx     context.Context // the tab's; actions run in children of it with a timeout
	profile string

	mu       sync.Mutex
	dialogs  []string // messages of the JavaScript dialogs opened
	requests []string // the URL of every request the pages made
	// what each request was (its type, the document it was made for, its initiator): a foreign one is
	// explained by it
	requestWhat map[string][]string
	blocked     []string // what the browser's security log says it blocked (Content-Security-Policy violations)
}

// chromiumPath is Debian's chromium; need() where it is missing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	need(t, false, "chromium is missing (apt-get install chromium fonts-dejavu-core)")
	return ""
}

// newBrowser starts chromium headless with a fresh profile in t.TempDir(). Cleanup ends it (chromedp's allocator
// cancel waits for the process) and fails the test if a process of that profile is left.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	b := &browser{profile: t.TempDir()}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.UserDataDir(b.profile), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		if left := processesOfProfile(b.profile); len(left) > 0 {
			t.Errorf("chromium processes left after the test: %v", left)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	require.NoError(t, chromedp.Do(ctx), "start chromium") // the browser lives as long as ctx, with no timeout
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			go func() { // a dialog blocks the page until answered; Listen's callback must not send commands
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.URL)
			if b.requestWhat == nil {
				b.requestWhat = map[string][]string{}
			}
			what := fmt.Sprintf("%s for %s", ev.Type, ev.DocumentURL)
			if ev.Initiator != nil {
				what += fmt.Sprintf(", initiated by %s %s", ev.Initiator.Type, ev.Initiator.URL)
			}
			b.requestWhat[ev.Request.URL] = append(b.requestWhat[ev.Request.URL], what)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity {
				b.blocked = append(b.blocked, ev.Entry.Text)
			}
		}
	}))
	b.ctx = ctx
	return b
}

// processesOfProfile are the pids of the processes whose command line names the profile folder.
func processesOfProfile(profile string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), profile) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// do runs actions in the tab, failing the test on an error or after a minute.
func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluate %s", expr)
	return v
}

// visit navigates to path (the browser holds the token as a cookie: login first) and waits for the page to load.
func (b *browser) visit(t *testing.T, u *uiServer, path string) {
	t.Helper()
	b.do(t, chromedp.Navigate(u.base+path))
}

// login visits the printed URL: the server trades its token for a cookie, so later pages need none in the URL.
func (b *browser) login(t *testing.T, u *uiServer) {
	t.Helper()
	b.do(t, chromedp.Navigate(u.url))
	loc := eval[string](t, b, `location.href`)
	require.NotContains(t, loc, u.token, "the token is dropped from the URL once it is a cookie")
}

// text is the page's visible text.
func (b *browser) text(t *testing.T) string {
	t.Helper()
	return eval[string](t, b, `document.body ? document.body.innerText : document.documentElement.textContent`)
}

// html is the page's whole document as the browser holds it.
func (b *browser) html(t *testing.T) string {
	t.Helper()
	return eval[string](t, b, `document.documentElement.outerHTML`)
}

// screenshot saves the page as name in t.TempDir() and, with SESSIONFS_UPDATE_SCREENSHOTS=1, in docs/img (README
// shows them).
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err, "screenshot %s", name)
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
	if os.Getenv("SESSIONFS_UPDATE_SCREENSHOTS") == "1" {
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "img", name), png, 0o644))
	}
}

// seen are the dialogs opened, the requests made and what the browser blocked so far.
func (b *browser) seen() (dialogs, requests, blocked []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...), append([]string(nil), b.requests...), append([]string(nil), b.blocked...)
}

// forget drops what was seen so far (a test's controls, before what it asserts).
func (b *browser) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dialogs, b.requests, b.blocked, b.requestWhat = nil, nil, nil, nil
}

// foreignRequests are the requests made so far to any origin but base's, each with what it was. The browser's own
// fetch of an origin's /favicon.ico (type Other, no page's doing: a page's icon link names its own URL) is not
// one: CI saw one once, to an origin not the ui's, which the hostile session's server had not received when the
// test looked (headless chromium fetches no favicon in this test's other runs). That server still counts every
// request that reaches it, a favicon's too, and no page of that origin can be shown without one.
func (b *browser) foreignRequests(base string) []string {
	_, reqs, _ := b.seen()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, r := range reqs {
		if r == base || strings.HasPrefix(r, base+"/") {
			continue
		}
		what := b.requestWhat[r]
		if u, err := url.Parse(r); err == nil && u.Path == "/favicon.ico" && u.RawQuery == "" &&
			!slices.ContainsFunc(what, func(w string) bool { return !strings.HasPrefix(w, "Other ") }) {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", r, strings.Join(what, "; ")))
	}
	return out
}

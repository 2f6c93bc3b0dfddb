package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// The web page at scale: what `sessionfs ui` takes to answer its list of sessions (/) on the bench's store
// (c.sessions sessions), beside the CLI's rows.

// uiAtScale times GET / of a `sessionfs ui` on the bench's store, c.cliRuns times, the whole page read.
func (b *bench) uiAtScale() {
	cmd := exec.Command(b.c.sessionfs, "ui")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+b.store)
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		b.skip("sessionfs ui: %v", err)
		return
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		first <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	var printed string
	select {
	case printed = <-first:
	case <-time.After(30 * time.Second):
		b.skip("sessionfs ui printed no URL in 30 s")
		return
	}
	u, err := url.Parse(printed)
	if err != nil || u.Host == "" {
		b.skip("sessionfs ui: its first line is no URL: %q", printed)
		return
	}
	client := &http.Client{Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(printed) // trades the token for the cookie every later request carries
	if err != nil {
		b.skip("sessionfs ui: %v", err)
		return
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	want := `data-session="` + benchSession + `"`
	var times []time.Duration
	for range b.c.cliRuns {
		req, _ := http.NewRequest(http.MethodGet, "http://"+u.Host+u.Path, nil) // the list: the URL's path, its token left out
		for _, c := range cookies {
			req.AddCookie(c)
		}
		var page []byte
		d, err := timed(func() error {
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			page, err = io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", resp.Status)
			}
			return err
		})
		if err == nil && !strings.Contains(string(page), want) {
			err = fmt.Errorf("the page lacks %s", want)
		}
		if err != nil {
			b.skip("sessionfs ui, GET /: %v: %.300s", err, page)
			return
		}
		times = append(times, d)
	}
	b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("sessionfs ui: the list (GET /) on %d sessions (median of %d)", b.c.sessions, len(times)),
		Value: ms(median(times)), Unit: "ms", Goal: "< 200 ms"})
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/travel"
)

// Long commands (export, import, fork, sync, run --backend modal) show their progress on stderr when it is a
// terminal, and stop cleanly on Ctrl-C.

// interruptible is a context that Ctrl-C or SIGTERM cancels: a long export, import or fork then stops between two
// entries and cleans up after itself.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// countingReader counts the bytes read through it, for a bar that follows an archive's reading.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bar is a progress bar on stderr, only when stderr is a terminal (a no-op otherwise).
type bar struct {
	verb string
	pb   *progressbar.ProgressBar
}

func newBar(verb string) *bar {
	b := &bar{verb: verb}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		b.pb = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription(verb), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
	}
	return b
}

// update shows done of total bytes, and files.
func (b *bar) update(done travel.Counts, totalBytes int64, totalFiles int) {
	if b.pb == nil {
		return
	}
	b.pb.ChangeMax64(totalBytes)
	b.pb.Describe(fmt.Sprintf("%s %d/%d files", b.verb, done.Files, totalFiles))
	_ = b.pb.Set64(done.Bytes)
}

// updateRead shows read of total archive bytes (-1: unknown), and what was restored.
func (b *bar) updateRead(read, total int64, done travel.Counts) {
	if b.pb == nil {
		return
	}
	b.pb.ChangeMax64(total)
	b.pb.Describe(fmt.Sprintf("%s %d files, %s", b.verb, done.Files, humanize.IBytes(uint64(done.Bytes))))
	_ = b.pb.Set64(read)
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}

// transferBar is a progress bar on stderr (when it is a terminal) whose total grows as the syncer announces
// transfers; finish ends it.
func transferBar(desc string) (progress, total func(int64), finish func()) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil, nil, func() {}
	}
	bar := progressbar.DefaultBytes(-1, desc)
	var max int64
	return func(n int64) { _ = bar.Add64(n) },
		func(n int64) { max += n; bar.ChangeMax64(max) },
		func() { _ = bar.Finish() }
}

// countBar is a bar of conversations done of a total (import's), on stderr when it is a terminal and quiet is
// false; progress is nil otherwise.
func countBar(desc string, quiet bool) (progress func(done, total int), finish func()) {
	if quiet || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil, func() {}
	}
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc), progressbar.OptionClearOnFinish())
	return func(done, total int) {
			bar.ChangeMax(total)
			_ = bar.Set(done)
		}, func() {
			_ = bar.Finish()
		}
}

// lateBarAfter: work that takes longer shows its bar; a quicker one shows nothing.
const lateBarAfter = 500 * time.Millisecond

// newCountBar is countBar, never quiet: the bar lateBar makes.
func newCountBar(desc string) (progress func(done, total int), finish func()) {
	return countBar(desc, false)
}

// lateBar is a bar made by newBar (which makes none off a terminal) shown once the work has taken lateBarAfter,
// drawn 10 times a second at most (the work waits while it draws) and always at the end; finish ends it.
func lateBar(desc string, newBar func(desc string) (progress func(done, total int), finish func())) (progress func(done, total int), finish func()) {
	start := time.Now()
	var draw func(done, total int)
	var shown time.Time
	end := func() {}
	return func(done, total int) {
			now := time.Now()
			if draw == nil {
				if now.Sub(start) < lateBarAfter {
					return
				}
				if draw, end = newBar(desc); draw == nil { // not a terminal
					draw = func(int, int) {}
				}
			} else if now.Sub(shown) < 100*time.Millisecond && done < total {
				return
			}
			shown = now
			draw(done, total)
		}, func() {
			end()
		}
}

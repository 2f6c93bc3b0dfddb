package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/search/searchtest"
)

// The text view at size: a Claude transcript of textViewSize bytes read whole through the mount's
// conversations/<session>/claude/<uuid>.md (rendered at the first read, the rendering kept for the next), against
// cat of its JSONL in the store, on a mount of its own.
const textViewSize = 10 << 20

func (b *bench) textView() {
	figs, err := textViewFigures(b.c.sessionfs, b.c.dir, b.c.runs)
	if err != nil {
		b.skip("text view: %v", err)
		return
	}
	b.Figures = append(b.Figures, figs...)
}

func textViewFigures(sessionfs, dir string, runs int) ([]figure, error) {
	root := filepath.Join(dir, "text-store")
	made, err := searchtest.Make(root, 1, 1, textViewSize)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	jsonl, err := filepath.Glob(filepath.Join(root, "sessions", "*", ".claude", "projects", "-session-workspace", "*.jsonl"))
	if err != nil || len(jsonl) != 1 {
		return nil, fmt.Errorf("the generated transcript: %v %v", jsonl, err)
	}
	session := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(jsonl[0])))))
	t, _, err := startSessionfs(sessionfs, root, filepath.Join(dir, "mnt-text"))
	if err != nil {
		return nil, err
	}
	defer t.stop()
	md := filepath.Join(t.root, "conversations", session, "claude", strings.TrimSuffix(filepath.Base(jsonl[0]), ".jsonl")+".md")
	read := func(p string) (time.Duration, int, error) {
		var n int
		d, err := timed(func() error {
			data, err := os.ReadFile(p)
			n = len(data)
			return err
		})
		return d, n, err
	}
	first, size, err := read(md)
	if err != nil {
		return nil, err
	}
	var kept, cat []time.Duration
	for range max(runs, 3) {
		d, _, err := read(md)
		if err != nil {
			return nil, err
		}
		kept = append(kept, d)
		if d, _, err = read(jsonl[0]); err != nil {
			return nil, err
		}
		cat = append(cat, d)
	}
	mb := float64(made.Bytes) / (1 << 20)
	medKept, medCat := medianDuration(kept), medianDuration(cat)
	fmt.Fprintf(os.Stderr, "text view of a %.1f MiB transcript (%d KiB of Markdown): first read %v, again %v; cat of the JSONL %v\n",
		mb, size>>10, first.Round(time.Millisecond), medKept.Round(time.Microsecond), medCat.Round(time.Microsecond))
	return []figure{
		{Name: fmt.Sprintf("text view of a %.0f MiB transcript, first read (renders it; %d KiB of Markdown)", mb, size>>10), Value: first.Seconds(), Unit: "s", Goal: "-"},
		{Name: "text view of it again (the rendering kept), median", Value: medKept.Seconds(), Unit: "s", Goal: "-"},
		{Name: "cat of its JSONL, median", Value: medCat.Seconds(), Unit: "s", Goal: "-"},
	}, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/search/searchtest"
)

// Search at scale: `sessionfs search` on a store of searchConvs synthetic Claude conversations of about 100 KB each
// (1 GB of transcripts), as a person types it: the index's build (search --reindex) and size, then each query's
// time, which includes the CLI's catch-up (a stat of every conversation file), and an append found.
const (
	searchConvs      = 10000
	searchPerSession = 10
	searchConvSize   = 100 << 10
)

func (b *bench) searchAtScale() {
	figs, err := searchFigures(b.c.sessionfs, filepath.Join(b.c.dir, "search-store"), searchConvs, b.c.cliRuns)
	if err != nil {
		b.skip("search at scale: %v", err)
	}
	b.Figures = append(b.Figures, figs...)
}

// searchFigures makes the store at root and measures search on it, runs times each query.
func searchFigures(sessionfs, root string, convs, runs int) ([]figure, error) {
	fmt.Fprintf(os.Stderr, "making a store of %d conversations for search in %s\n", convs, root)
	made, err := searchtest.Make(root, convs, searchPerSession, searchConvSize)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	search := func(args ...string) (string, time.Duration, error) {
		cmd := exec.Command(sessionfs, append([]string{"search"}, args...)...)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+root)
		var out []byte
		d, err := timed(func() (err error) { out, err = cmd.CombinedOutput(); return err })
		if err != nil {
			err = fmt.Errorf("search %s: %v: %.300s", strings.Join(args, " "), err, out)
		}
		return string(out), d, err
	}
	gib := float64(made.Bytes) / (1 << 30)
	fmt.Fprintf(os.Stderr, "%-45s", "sessionfs search --reindex")
	_, build, err := search("--reindex")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, " %.1f s\n", build.Seconds())
	st, err := os.Stat(filepath.Join(root, "index", "search.db"))
	if err != nil {
		return nil, err
	}
	figs := []figure{
		{Name: fmt.Sprintf("search index build (--reindex) of %d conversations, %.2f GiB", convs, gib), Value: build.Seconds(), Unit: "s", Goal: "-"},
		{Name: fmt.Sprintf("search index size for %.2f GiB of transcripts", gib), Value: float64(st.Size()) / (1 << 20), Unit: "MiB", Goal: "-"},
	}
	queries := []struct{ name, query, want string }{
		{"a rare word", searchtest.Needle, searchtest.Needle},
		{"a phrase", searchtest.NeedleQuery, searchtest.Needle},
		{"a prefix", searchtest.Needle[:6] + "*", searchtest.Needle},
		{"-l, a rare word", "-l " + searchtest.Needle, "search"},
		{"the most common word", made.Common, made.Common},
	}
	times := make([][]time.Duration, len(queries))
	for run := 0; run < runs; run++ {
		for k := range queries {
			k = (k + run) % len(queries)
			args := strings.Fields(queries[k].query)
			if !strings.HasPrefix(queries[k].query, "-l") {
				args = []string{queries[k].query}
			}
			out, d, err := search(args...)
			if err == nil && !strings.Contains(out, queries[k].want) {
				err = fmt.Errorf("search %s: its output lacks %s", queries[k].query, queries[k].want)
			}
			if err != nil {
				return figs, err
			}
			times[k] = append(times[k], d)
		}
	}
	for k, q := range queries {
		figs = append(figs, figure{Name: fmt.Sprintf("sessionfs search %s on %d conversations (median of %d)", q.name, convs, len(times[k])),
			Value: ms(median(times[k])), Unit: "ms", Goal: "< 100 ms"})
	}
	// An append to one conversation, then the search that finds it (its catch-up indexes the append alone).
	p := filepath.Join(root, "sessions", "search00000", ".claude", "projects", "-session-workspace", "5ea4c400-0000-4000-8000-000000000000.jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return figs, err
	}
	_, err = fmt.Fprintf(f, `{"type":"user","sessionId":"5ea4c400-0000-4000-8000-000000000000","timestamp":%q,"cwd":"/session/workspace","message":{"role":"user","content":"an appended zeugma"}}`+"\n",
		time.Now().UTC().Format(time.RFC3339))
	f.Close()
	if err != nil {
		return figs, err
	}
	out, d, err := search("zeugma")
	if err == nil && !strings.Contains(out, "zeugma") {
		err = fmt.Errorf("the append was not found: %.300s", out)
	}
	if err != nil {
		return figs, err
	}
	figs = append(figs, figure{Name: fmt.Sprintf("sessionfs search finding an append to a conversation, on %d conversations", convs),
		Value: ms(d), Unit: "ms", Goal: "< 1000 ms"})
	return figs, nil
}

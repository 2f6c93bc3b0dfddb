package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// What stays in FUSE once the heavy folders are binds: transcripts appended through a cwd-named view, and a
// listing of .claude. Timed on every target (plain, store and bindfs write the canonical folder, which is what the view
// shows), then counted in FUSE requests on a --debug mount of its own, since the count, not the time, says
// whether the mount sends only what the kernel requires.

// viewAlias is the cwd-named folder the mount's workloads go through (any such name is a view of the canonical
// folder).
const viewAlias = "-home-user-proj"

// transcriptDir is where a target's transcript workloads write.
func transcriptDir(t *target) string {
	name := "-session-workspace"
	if t.mnt {
		name = viewAlias
	}
	return filepath.Join(t.sessionDir(benchSession), ".claude", "projects", name)
}

// viewWorkloads times the transcript appends and the .claude listing on every target. The appends are as many as
// the workspace's JSONL row's: a view in use becomes a bind a few milliseconds after the first append, and an
// agent's conversation is longer than that (the first appends' cost is in each round's time, docs/bench.json).
func (b *bench) viewWorkloads() {
	n := b.c.appends
	b.perTarget(fmt.Sprintf("%d JSONL appends through a transcript view", n), b.c.runs, func(t *target) error {
		p := filepath.Join(transcriptDir(t), "bench-view.jsonl")
		if err := rmIfExists(p); err != nil {
			return err
		}
		return appendLines(p, n)
	})
	b.perTarget("ls -lR of .claude (warm)", b.c.runs, func(t *target) error {
		_, err := lsWalk(filepath.Join(t.sessionDir(benchSession), ".claude"))
		return err
	})
}

// rxLine is a request in go-fuse's debug log: "rx 12: LOOKUP n1 ...".
var rxLine = regexp.MustCompile(`rx \d+: ([A-Z_]+)`)

// roundTrips counts the FUSE requests of the view workloads on a --debug mount of the store (the bench's own
// mount stopped first: a store is mounted once), per operation.
func (b *bench) roundTrips() {
	b.mount.stop()
	mnt := filepath.Join(b.c.dir, "mnt-debug")
	logPath := filepath.Join(b.c.dir, "debug.log")
	t, _, err := startSessionfsLog(b.c.sessionfs, b.store, mnt, logPath, "--debug")
	if err != nil {
		b.skip("round trips: %v", err)
		return
	}
	defer t.stop()
	count := func(work func() error) (map[string]int, error) {
		_, _ = os.Stat(filepath.Join(transcriptDir(t), "."))
		time.Sleep(100 * time.Millisecond) // the bind and the look-ups of the way there are not the work's
		before, err := os.ReadFile(logPath)
		if err != nil {
			return nil, err
		}
		if err := work(); err != nil {
			return nil, err
		}
		time.Sleep(100 * time.Millisecond) // RELEASE trails close
		after, err := os.ReadFile(logPath)
		if err != nil {
			return nil, err
		}
		ops := map[string]int{}
		for _, m := range rxLine.FindAllStringSubmatch(string(after[len(before):]), -1) {
			ops[m[1]]++
		}
		return ops, nil
	}
	const appends = 1000
	p := filepath.Join(transcriptDir(t), "bench-rt.jsonl")
	ops, err := count(func() error { return appendLines(p, appends) })
	if err != nil {
		b.skip("round trips of appends: %v", err)
		return
	}
	b.RoundTrips = append(b.RoundTrips, roundTrip{Work: "JSONL append through a view (open, write, close)", Per: appends, Ops: ops})
	claude := filepath.Join(t.sessionDir(benchSession), ".claude")
	_, _ = lsWalk(claude) // warm: the appends above changed the transcript folder's listing
	ops, err = count(func() error { _, err := lsWalk(claude); return err })
	if err != nil {
		b.skip("round trips of ls -lR: %v", err)
		return
	}
	b.RoundTrips = append(b.RoundTrips, roundTrip{Work: "ls -lR of .claude (warm)", Per: 1, Ops: ops})
	ws := filepath.Join(t.sessionDir(benchSession), "workspace", "rt")
	ops, err = count(func() error {
		if err := fresh(ws); err != nil {
			return err
		}
		return createFiles(ws, 1000)
	})
	if err != nil {
		b.skip("round trips of workspace creates: %v", err)
		return
	}
	b.RoundTrips = append(b.RoundTrips, roundTrip{Work: "create a file in a bound workspace", Per: 1000, Ops: ops})
}

// roundTrip is the FUSE requests one piece of work sent, per operation.
type roundTrip struct {
	Work string         `json:"work"`
	Per  int            `json:"per"` // operations the counts are for
	Ops  map[string]int `json:"ops"`
}

func (r roundTrip) String() string {
	total := 0
	var parts []string
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for op := range r.Ops {
			if !yield(op) {
				return
			}
		}
	}) {
		total += r.Ops[op]
		parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(r.Ops[op])/float64(r.Per)))
	}
	return fmt.Sprintf("%s: %.2f FUSE requests each (%s)", r.Work, float64(total)/float64(r.Per), strings.Join(parts, ", "))
}

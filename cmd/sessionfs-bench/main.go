// Command sessionfs-bench measures the same work in a plain folder beside the store (the baseline: no daemon
// watches it), in the store's folder while the daemon serves it, through a sessionfs mount of it, and through
// bindfs when installed, and beside them the floor of any FUSE mount (floor.go), in one run, and prints figures,
// ratios to the plain folder and the daemons' CPU (make bench). It is a benchmark,
// not a test: it asserts nothing and installs nothing; it says what it skipped.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

type config struct {
	sessionfs string // the sessionfs binary to mount with
	size      int64  // bytes of the sequential file
	runs      int
	files     int // small files, and files of the walked tree
	appends   int
	// topAppends are the appends of the workload, at the top of the workspace.
	topAppends   int
	agentRuns    int    // runs of the agent workload (its steps' medians)
	agentPlaces  string // a regexp: the places the agent workload runs in
	cliRuns      int    // runs of each CLI command on the store of c.sessions sessions
	sessions     int    // sessions in the store for the start-up and RSS figures
	duWalk       int    // sessions walked by the du workload
	treeSrc      string // the source tree of the agent workload (default: the Go module cache)
	treeFiles    int    // files of it in the agent workload's tarball
	agentOnly    bool
	csiOnly      bool
	takeoverOnly bool
	cliOnly      bool
	walkOnly     bool
	startOnly    bool
	fuseOnly     bool
	// unconfined adds a second store mounted with --confine off beside the confined one (root only): the
	// confinement's cost, measured in the same run.
	unconfined bool
	only       string // a regexp: run only the file-by-file workloads whose names match
	sync       syncConfig
	rounds     bool // print each round of the file-by-file workloads, with the daemons' use
	jsonOut    string
	dir        string
}

func main() {
	var c config
	flag.StringVar(&c.sessionfs, "sessionfs", "bin/sessionfs", "the sessionfs binary")
	flag.Int64Var(&c.size, "size", 1<<30, "bytes written and read sequentially")
	flag.IntVar(&c.runs, "runs", 5, "interleaved rounds of each workload; min, median and max are reported")
	flag.IntVar(&c.files, "files", 10000, "small files created, and files in the walked tree")
	flag.IntVar(&c.appends, "appends", 100000, "JSONL appends (open O_APPEND, write a line, close)")
	flag.IntVar(&c.topAppends, "top-appends", 50000, "appends (open O_APPEND, write a line, close) at the top of the session's workspace")
	flag.IntVar(&c.agentRuns, "agent-runs", 9, "runs of the agent workload; the median of each step is reported (du and find in a container take 43 or 75 ms from round to round, in every container place: 5 rounds let the median fall on either)")
	flag.StringVar(&c.agentPlaces, "agent-places", "^(plain|store|sessionfs|exec|docker-bind|docker-mount|docker-composed|docker-sessionfs)$",
		"the places the agent workload runs in, a regexp (all: plain, store, sessionfs, unconfined, bindfs, exec, docker-bind, docker-mount, docker-composed, docker-sessionfs)")
	flag.IntVar(&c.cliRuns, "cli-runs", 5, "runs of each CLI command (ls, ls -q, find) on the store of -sessions sessions")
	flag.IntVar(&c.duWalk, "du-sessions", 1000, "sessions walked by the du workload")
	flag.IntVar(&c.sessions, "sessions", 10000, "sessions in the store for mount start-up and daemon RSS")
	flag.StringVar(&c.treeSrc, "tree-src", "", "the source tree the agent workload untars (default: the Go module cache)")
	flag.IntVar(&c.treeFiles, "tree-files", 12000, "files in the agent workload's tree")
	flag.BoolVar(&c.agentOnly, "agent-only", false, "run only the agent workload")
	flag.BoolVar(&c.csiOnly, "csi-only", false, "run only the CSI plugin's publish and unpublish timing")
	flag.BoolVar(&c.takeoverOnly, "takeover-only", false, "run only what keeping a mount's state for a takeover costs (the node log, start-up, .claude work and POSIX locks held and not, an upgrade's stall)")
	flag.BoolVar(&c.cliOnly, "cli-only", false, "run only the CLI at scale (ls, ls -q, find on the store of -sessions sessions)")
	flag.BoolVar(&c.unconfined, "unconfined", true, "as root, also time a second store mounted with --confine off, beside the confined mount")
	flag.BoolVar(&c.startOnly, "startup-only", false, "run only the start-up figures (mount and mount --daemon)")
	flag.BoolVar(&c.fuseOnly, "fuse-only", false, "run only what stays in FUSE: the transcript-view and .claude rows, du of the sessions, and their FUSE requests")
	flag.BoolVar(&c.walkOnly, "walk-only", false, "run only the walk of sessions (du, and the daemon's RSS after it)")
	flag.StringVar(&c.only, "only", "", "run only the file-by-file workloads whose names match this regexp (e.g. 'create|stat')")
	flag.BoolVar(&c.rounds, "rounds", false, "print each round of the file-by-file workloads as it ends, with the daemons' CPU, wake-ups and reads")
	flag.StringVar(&c.jsonOut, "json", "docs/bench.json", "where to write the figures as JSON")
	flag.StringVar(&c.dir, "dir", "", "a folder on the disk to measure (default: a new temporary folder)")
	syncFlags(&c.sync)
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "sessionfs-bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	bin, err := filepath.Abs(c.sessionfs)
	if err != nil {
		return err
	}
	c.sessionfs = bin
	if _, err := regexp.Compile(c.only); err != nil {
		return fmt.Errorf("-only: %v", err)
	}
	if _, err := regexp.Compile(c.agentPlaces); err != nil {
		return fmt.Errorf("-agent-places: %v", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no sessionfs binary at %s (make build)", bin)
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "sessionfs-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(c.dir)
	}
	if c.sync.only {
		return runSyncOnly(c)
	}
	b, err := newBench(c)
	if err != nil {
		return err
	}
	defer b.close()
	b.runAll()
	b.report(os.Stdout)
	b.reportAgent(os.Stdout)
	b.reportSync(os.Stdout)
	if err := b.writeJSON(c.jsonOut); err != nil {
		return err
	}
	return b.Sync.failure()
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// What keeping a mount's connection past its daemon costs: a mount whose helper holds the connection
// and logs every node id handed to the kernel (--takeover, the default as root) against one that does not
// (--takeover=false), each on a store of its own with one session: start-up, and a lookup- and create-heavy
// workload in the session's .claude (served through FUSE: every name is a node logged); and an upgrade's stall:
// the longest a reader of .claude/settings.json waits while `sessionfs mount` hands the held mount over. And what a
// POSIX lock costs when each lock owner's descriptor is kept by the holder (mount/takeover/lockowners.go): a lock and an
// unlock, each owner's first and last, are a message to the holder each.
const (
	takeoverFiles = 2000
	takeoverLocks = 2000
)

func (b *bench) takeover() {
	b.nodeLog() // in this process: no mount, no root
	if os.Geteuid() != 0 {
		b.skip("takeover: a holder keeps the connection of a confined root mount only")
		return
	}
	figs, err := takeoverFigures(b.c.sessionfs, b.c.dir, max(b.c.runs, 5))
	if err != nil {
		b.skip("takeover: %v", err)
		return
	}
	b.Figures = append(b.Figures, figs...)
}

func takeoverFigures(sessionfs, dir string, runs int) ([]figure, error) {
	modes := []struct{ name, flag string }{{"held", "--takeover"}, {"not held", "--takeover=false"}}
	starts, work, locks := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	for round := range runs {
		for _, m := range modes {
			store := filepath.Join(dir, fmt.Sprintf("takeover-store-%d-%d", round, len(starts[m.name])))
			if err := newStoreWithSession(sessionfs, store); err != nil {
				return nil, err
			}
			t, took, err := startSessionfs(sessionfs, store, filepath.Join(dir, "mnt-takeover"), m.flag)
			if err != nil {
				return nil, err
			}
			starts[m.name] = append(starts[m.name], took)
			d, err := timed(func() error { return lookupCreateWorkload(filepath.Join(t.sessionDir("s1"), ".claude", "bench")) })
			if err == nil {
				var l time.Duration
				l, err = timed(func() error { return lockWorkload(filepath.Join(t.sessionDir("s1"), ".claude", "bench.lock")) })
				locks[m.name] = append(locks[m.name], l)
			}
			unmountTarget(sessionfs, store, t)
			os.RemoveAll(store)
			if err != nil {
				return nil, err
			}
			work[m.name] = append(work[m.name], d)
		}
	}
	stalls, err := upgradeStalls(sessionfs, dir, runs)
	if err != nil {
		return nil, err
	}
	held, free := medianDuration(work["held"]), medianDuration(work["not held"])
	lockHeld, lockFree := medianDuration(locks["held"]), medianDuration(locks["not held"])
	fmt.Fprintf(os.Stderr, "takeover: %d POSIX lock+unlock cycles in .claude: %v held (each owner kept by the holder), %v not (%.2fx)\n",
		takeoverLocks, lockHeld.Round(time.Millisecond), lockFree.Round(time.Millisecond), lockHeld.Seconds()/lockFree.Seconds())
	fmt.Fprintf(os.Stderr, "takeover: start-up %v held, %v not; %d files made, stated, listed and removed in .claude: %v held, %v not (%.2fx); upgrade stalls %v\n",
		medianDuration(starts["held"]).Round(time.Millisecond), medianDuration(starts["not held"]).Round(time.Millisecond),
		takeoverFiles, held.Round(time.Millisecond), free.Round(time.Millisecond), held.Seconds()/free.Seconds(), stalls)
	return []figure{
		{Name: "mount start-up, the connection held (--takeover), median", Value: medianDuration(starts["held"]).Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: "mount start-up, not held (--takeover=false), median", Value: medianDuration(starts["not held"]).Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: fmt.Sprintf("%d files made, stated, listed, removed in .claude, held (node log kept), median", takeoverFiles), Value: held.Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: "the same, not held, median", Value: free.Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: fmt.Sprintf("%d POSIX lock+unlock cycles in .claude, held (each owner's descriptor kept by the holder), median", takeoverLocks), Value: lockHeld.Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: "the same, not held, median", Value: lockFree.Seconds() * 1000, Unit: "ms", Goal: "-"},
		{Name: "an upgrade's longest stall of a reader of .claude/settings.json, median", Value: medianDuration(stalls).Seconds() * 1000, Unit: "ms", Goal: "< 1000 ms"},
		{Name: "an upgrade's longest stall, the worst", Value: slices.Max(stalls).Seconds() * 1000, Unit: "ms", Goal: "< 1000 ms"},
	}, nil
}

// nodeLogChurned and nodeLogHeld: the node log's rows churn a million nodes looked up and forgotten (about 100 MB of
// records: the log compacts as it fills) while the kernel holds ten thousand.
const (
	nodeLogChurned = 1_000_000
	nodeLogHeld    = 10_000
)

// nodeLog is what keeping the node log costs each record, and the pauses of its compactions.
func (b *bench) nodeLog() {
	f, err := nodelog.Churn(nodeLogChurned, nodeLogHeld)
	if err != nil {
		b.skip("node log: %v", err)
		return
	}
	fmt.Fprintf(os.Stderr, "node log: %d nodes looked up and forgotten, %d held: %v a record, %d compactions, switches %v mean, %v the longest, %d appends waited for room %v in all; one node's records took %v at the 99.9th percentile, %v the longest\n",
		f.Churned, f.Held, f.PerRecord, f.Compactions, f.MeanSwitch, f.LongestSwitch, f.Waits, f.Waited, f.P999Churn, f.LongestChurn)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.Figures = append(b.Figures,
		figure{Name: "node log: a record (1M lookups and forgets churned, 10,000 nodes held)", Value: float64(f.PerRecord.Nanoseconds()), Unit: "ns", Goal: "-"},
		figure{Name: "node log: compactions of those", Value: float64(f.Compactions), Unit: "", Goal: "-"},
		figure{Name: "node log: a compaction's switch (appends held back), the longest", Value: us(f.LongestSwitch), Unit: "µs", Goal: "-"},
		figure{Name: "node log: one lookup and forget recorded, the longest (a switch included)", Value: us(f.LongestChurn), Unit: "µs", Goal: "-"},
	)
}

// newStoreWithSession makes a store at root with one session, s1.
func newStoreWithSession(sessionfs, root string) error {
	cmd := exec.Command(sessionfs, "new", "s1")
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sessionfs new: %v: %s", err, out)
	}
	return nil
}

// unmountTarget ends a mount whichever daemon serves it now (an upgrade's is not the one t started).
func unmountTarget(sessionfs, store string, t *target) {
	cmd := exec.Command(sessionfs, "unmount", t.root)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	_ = cmd.Run()
	t.stop()
}

// lookupCreateWorkload makes takeoverFiles files in dir, stats each by name, lists dir and removes them: every
// name a node the kernel is handed, and forgets.
func lookupCreateWorkload(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for i := range takeoverFiles {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%05d", i)))
		if err != nil {
			return err
		}
		f.Close()
	}
	for i := range takeoverFiles {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("f%05d", i))); err != nil {
			return err
		}
	}
	if _, err := os.ReadDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// lockWorkload takes and releases a POSIX write lock of a file's first byte takeoverLocks times: each lock makes
// the daemon an owner's descriptor (kept by the holder, when held), each unlock closes it.
func lockWorkload(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for range takeoverLocks {
		for _, typ := range []int16{unix.F_WRLCK, unix.F_UNLCK} {
			if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &unix.Flock_t{Type: typ, Len: 1}); err != nil {
				return fmt.Errorf("lock %s: %w", path, err)
			}
		}
	}
	return nil
}

// upgradeStalls hands a held mount over to the same binary runs times while a reader reads .claude/settings.json
// without pause, and returns the longest wait of the reader during each hand-over.
func upgradeStalls(sessionfs, dir string, runs int) ([]time.Duration, error) {
	store := filepath.Join(dir, "takeover-upgrade-store")
	if err := newStoreWithSession(sessionfs, store); err != nil {
		return nil, err
	}
	defer os.RemoveAll(store)
	t, _, err := startSessionfs(sessionfs, store, filepath.Join(dir, "mnt-upgrade"))
	if err != nil {
		return nil, err
	}
	defer unmountTarget(sessionfs, store, t)
	settings := filepath.Join(t.sessionDir("s1"), ".claude", "settings.json")
	var longest atomic.Int64 // nanoseconds, since the last reset
	var failed atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.ReadFile(settings); err != nil {
				failed.Store(err)
				return
			}
			now := time.Now()
			if gap := now.Sub(last).Nanoseconds(); gap > longest.Load() {
				longest.Store(gap)
			}
			last = now
		}
	}()
	var stalls []time.Duration
	for range runs {
		longest.Store(0)
		cmd := exec.Command(sessionfs, "mount", t.root)
		cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
		if out, err := cmd.CombinedOutput(); err != nil {
			close(stop)
			<-done
			return nil, fmt.Errorf("the hand-over: %v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond) // the reader's reads after the hand-over close the gap it waited through
		stalls = append(stalls, time.Duration(longest.Load()).Round(time.Millisecond))
	}
	close(stop)
	<-done
	if err, ok := failed.Load().(error); ok {
		return nil, fmt.Errorf("the reader failed: %w", err)
	}
	return stalls, nil
}

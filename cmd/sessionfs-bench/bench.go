package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

const benchSession = "bench"

// bench holds the store, the targets and the figures of one run.
type bench struct {
	c       config
	store   string
	targets []*target // plain first, then the store's folder, then the mounts
	plain   string    // the plain folder's root: sessions laid out as in the store, outside it, watched by nobody
	mount   *target
	floor   *target // the file rows' floor (floor.go); nil where it could not be mounted
	// free is the unconfined mount's store (and free its mount), when -unconfined: the same sessions, served
	// with --confine off.
	freeStore string
	free      *target
	Results   []result     `json:"results"`
	Agent     *agentResult `json:"agent,omitempty"`
	Sync      *syncResult  `json:"sync,omitempty"`
	Figures   []figure     `json:"figures"`
	// RoundTrips are the FUSE requests of the work that stays in FUSE, per operation (views.go).
	RoundTrips []roundTrip `json:"round_trips"`
	Skipped    []string    `json:"skipped,omitempty"`
	Machine    string      `json:"machine"`
	Date       string      `json:"date"`
}

// result is the median time of one workload on each target.
type result struct {
	Workload string             `json:"workload"`
	Seconds  map[string]float64 `json:"seconds"` // the median of each place's runs
	// Runs are each place's runs in the order they ran, to tell a place's own slowness from the disk's noise.
	Runs map[string][]float64 `json:"runs"`
	// CPU is the median CPU time the sessionfs daemons used during each place's runs (cpu.go); CPURuns each run's.
	CPU     map[string]float64   `json:"daemon_cpu_seconds,omitempty"`
	CPURuns map[string][]float64 `json:"daemon_cpu_runs,omitempty"`
	// WakeupRuns and ReadRuns are the daemons' context switches and read syscalls during each run (cpu.go).
	WakeupRuns map[string][]int64 `json:"daemon_wakeup_runs,omitempty"`
	ReadRuns   map[string][]int64 `json:"daemon_read_runs,omitempty"`
}

// newResult starts the result of a workload.
func newResult(workload string) result {
	return result{Workload: workload, Seconds: map[string]float64{}, Runs: map[string][]float64{}}
}

// add records a place's runs and their median.
func (r *result) add(place string, runs []time.Duration) {
	r.Seconds[place] = median(runs).Seconds()
	for _, d := range runs {
		r.Runs[place] = append(r.Runs[place], d.Seconds())
	}
}

// addCPU records the daemons' CPU during each of a place's runs, and its median.
func (r *result) addCPU(place string, runs []time.Duration) {
	if r.CPU == nil {
		r.CPU, r.CPURuns = map[string]float64{}, map[string][]float64{}
	}
	r.CPU[place] = median(runs).Seconds()
	for _, d := range runs {
		r.CPURuns[place] = append(r.CPURuns[place], d.Seconds())
	}
}

// addUse records the daemons' use during each of a place's runs: CPU (and its median), wake-ups and reads.
func (r *result) addUse(place string, runs []daemonUse) {
	cpu := make([]time.Duration, len(runs))
	if r.WakeupRuns == nil {
		r.WakeupRuns, r.ReadRuns = map[string][]int64{}, map[string][]int64{}
	}
	for i, u := range runs {
		cpu[i] = u.CPU
		r.WakeupRuns[place] = append(r.WakeupRuns[place], u.Wakeups)
		r.ReadRuns[place] = append(r.ReadRuns[place], u.Reads)
	}
	r.addCPU(place, cpu)
}

// figure is a single measurement with its goal.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Goal  string  `json:"goal"`
}

func newBench(c config) (*bench, error) {
	b := &bench{c: c, store: filepath.Join(c.dir, "store"), Date: time.Now().UTC().Format(time.RFC3339)}
	b.Machine = machine()
	fmt.Fprintf(os.Stderr, "making a store of %d sessions in %s\n", c.sessions, b.store)
	if err := makeSessions(b.store, c.sessions); err != nil {
		return nil, err
	}
	if err := plantTranscripts(b.store, c.sessions); err != nil {
		return nil, err
	}
	if c.unconfined && os.Geteuid() == 0 {
		b.freeStore = filepath.Join(c.dir, "store-unconfined")
		fmt.Fprintf(os.Stderr, "making a store of %d sessions in %s, to mount with --confine off\n", c.sessions, b.freeStore)
		if err := makeSessions(b.freeStore, c.sessions); err != nil {
			return nil, err
		}
	}
	b.startup()
	if c.startOnly {
		return b, nil
	}
	// The baseline: the bench session and the sessions du walks, laid out as in the store, in a folder beside it
	// (the same filesystem) that no daemon watches.
	b.plain = filepath.Join(c.dir, "plain")
	if err := makeSessions(b.plain, c.duWalk+1); err != nil {
		return nil, err
	}
	plain := &target{name: "plain", root: b.plain, stop: func() {}}
	// The store's own folder, while the daemon serving it runs (and watches what it watches).
	store := &target{name: "store", root: b.store, stop: func() {}}
	m, _, err := startSessionfs(c.sessionfs, b.store, filepath.Join(c.dir, "mnt-sessionfs"))
	if err != nil {
		return nil, err
	}
	b.mount = m
	b.targets = []*target{plain, store, m}
	// As a person does who lists a session as it is opened: the workspace's first listing is FUSE's, before its
	// bind; what the daemon then watches there is what the workloads in the bound workspace may pay.
	if served, err := listBeforeBind(m.sessionDir(benchSession)); err != nil {
		b.skip("the bench session's workspace listed through the mount: %v", err)
	} else if !served {
		b.skip("the bench session's workspace was bound before its first listing reached FUSE")
	}
	if os.Geteuid() == 0 && !waitBound(m.sessionDir(benchSession), 5*time.Second) {
		b.skip("the bench session's workspace was not bound over the mount within 5 s: the mount's figures are FUSE's")
	}
	if b.freeStore != "" {
		f, _, err := startSessionfs(c.sessionfs, b.freeStore, filepath.Join(c.dir, "mnt-unconfined"), "--confine", "off")
		if err != nil {
			b.close()
			return nil, err
		}
		f.name, b.free = "unconfined", f
		b.targets = append(b.targets, f)
		if !waitBound(f.sessionDir(benchSession), 5*time.Second) {
			b.skip("the bench session's workspace was not bound over the unconfined mount within 5 s")
		}
	}
	if bf, err := startBindfs(b.store, filepath.Join(c.dir, "mnt-bindfs")); err != nil {
		b.skip("bindfs: %v", err)
	} else {
		b.targets = append(b.targets, bf)
	}
	if os.Geteuid() != 0 {
		b.skip("the floor: binding a folder needs root")
	} else if fl, err := startFloor(filepath.Join(c.dir, "floor-workspace"), filepath.Join(c.dir, "mnt-floor")); err != nil {
		b.skip("the floor: %v", err)
	} else {
		b.floor = fl
	}
	for _, t := range b.fileTargets() {
		if err := os.MkdirAll(b.dir(t), 0o755); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// dir is the folder of a target's workloads, in the bench session's workspace.
func (b *bench) dir(t *target) string {
	return filepath.Join(t.sessionDir(benchSession), "workspace", t.name)
}

func (b *bench) skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.Skipped = append(b.Skipped, msg)
	fmt.Fprintln(os.Stderr, "skipped:", msg)
}

// fileTargets are the places of the file-by-file table: the targets and the floor.
func (b *bench) fileTargets() []*target {
	if b.floor == nil {
		return b.targets
	}
	return append(slices.Clip(b.targets), b.floor)
}

func (b *bench) close() {
	for _, t := range b.fileTargets() {
		t.stop()
	}
}

// makeSessions lays out n sessions as the store holds them, each with a few files and a transcript. It writes
// plain files (no fsync): this is set-up, not measured.
func makeSessions(store string, n int) error {
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%05d", i)
		if i == 0 {
			id = benchSession
		}
		root := filepath.Join(store, "sessions", id)
		canon := filepath.Join(root, ".claude", "projects", "-session-workspace")
		for _, d := range []string{filepath.Join(root, "app"), filepath.Join(root, "mcps"), filepath.Join(root, "workspace", "src"), canon} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		meta := fmt.Sprintf(`{"id":%q,"created":"2026-01-01T00:00:00Z"}`+"\n", id)
		if err := os.WriteFile(filepath.Join(root, "session.json"), []byte(meta), 0o644); err != nil {
			return err
		}
		files := map[string]int{
			filepath.Join(root, "workspace", "README.md"):         1500,
			filepath.Join(root, "workspace", "src", "main.go"):    4000,
			filepath.Join(canon, "0b7c6a1e-1111-2222-3333.jsonl"): 20000,
		}
		if i == 0 { // the other sessions' app and mcps are empty, as new makes them
			files[filepath.Join(root, "app", "run.sh")] = 300
		}
		for p, size := range files {
			if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(filepath.Join(store, "trash"), 0o755)
}

// startKind is one way the start-up figures mount: the confined mount, or (with -unconfined) the same sessions
// with --confine off.
type startKind struct {
	suffix, store string
	extra         []string
}

// startKinds are the mounts the start-up figures time, interleaved run by run.
func (b *bench) startKinds() []startKind {
	kinds := []startKind{{"", b.store, nil}}
	if b.freeStore != "" {
		kinds = append(kinds, startKind{" (--confine off)", b.freeStore, []string{"--confine", "off"}})
	}
	return kinds
}

// startup measures how long sessionfs takes to serve a store of c.sessions sessions.
func (b *bench) startup() {
	kinds := b.startKinds()
	times := make([][]time.Duration, len(kinds))
	for i := 0; i < b.c.runs; i++ {
		for j := range kinds {
			j = (j + i) % len(kinds) // interleaved, so drift hits each alike
			t, d, err := startSessionfs(b.c.sessionfs, kinds[j].store, filepath.Join(b.c.dir, "mnt-startup"), kinds[j].extra...)
			if err != nil {
				b.skip("start-up%s: %v", kinds[j].suffix, err)
				return
			}
			t.stop()
			times[j] = append(times[j], d)
		}
	}
	for j, k := range kinds {
		b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("mount start-up with %d sessions%s", b.c.sessions, k.suffix),
			Value: ms(median(times[j])), Unit: "ms", Goal: "< 50 ms"})
	}
	b.startupDaemon()
}

// startupDaemon measures mount --daemon: until it returns, the mount serving (two starts of the binary: the
// command, and the daemon it detaches).
func (b *bench) startupDaemon() {
	mnt := filepath.Join(b.c.dir, "mnt-startup-daemon")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		b.skip("mount --daemon start-up: %v", err)
		return
	}
	kinds := b.startKinds()
	times := make([][]time.Duration, len(kinds))
	for i := 0; i < b.c.runs; i++ {
		for j := range kinds {
			j = (j + i) % len(kinds)
			args := append([]string{"mount", "--daemon", "--log", filepath.Join(b.c.dir, "daemon.log")}, kinds[j].extra...)
			cmd := exec.Command(b.c.sessionfs, append(args, mnt)...)
			cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+kinds[j].store)
			start := time.Now()
			out, err := cmd.Output()
			d := time.Since(start)
			if err != nil {
				b.skip("mount --daemon start-up%s: %v", kinds[j].suffix, err)
				return
			}
			var pid int
			_, _ = fmt.Sscan(string(out), &pid)
			if err := exec.Command(b.c.sessionfs, "unmount", mnt).Run(); err != nil {
				_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
			}
			for deadline := time.Now().Add(10 * time.Second); pid > 0 && syscall.Kill(pid, 0) == nil && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			times[j] = append(times[j], d)
		}
	}
	for j, k := range kinds {
		b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("mount --daemon start-up with %d sessions%s", b.c.sessions, k.suffix),
			Value: ms(median(times[j])), Unit: "ms", Goal: "< 100 ms"})
	}
}

func (b *bench) runAll() {
	if b.c.startOnly {
		return
	}
	if b.c.agentOnly {
		b.agentWorkload()
		return
	}
	if b.c.walkOnly {
		b.sessionsWalk()
		return
	}
	if b.c.fuseOnly {
		b.viewWorkloads()
		b.duSessions()
		b.roundTrips()
		return
	}
	if b.c.takeoverOnly {
		b.takeover()
		return
	}
	if b.c.csiOnly {
		b.csiPublish()
		return
	}
	if b.c.cliOnly {
		b.cliAtScale()
		return
	}
	canDrop := dropCaches() == nil
	if !canDrop {
		b.skip("cold workloads: dropping the caches needs root")
	}
	only, err := regexp.Compile(b.c.only)
	if err != nil {
		b.skip("-only: %v", err)
		return
	}
	for _, w := range b.c.workloads() {
		if !only.MatchString(w.name) {
			continue
		}
		if w.cold && !canDrop {
			continue
		}
		fmt.Fprintf(os.Stderr, "%-45s", w.name)
		b.Results = append(b.Results, b.measureOn(b.fileTargets(), w.name, b.c.runs, w.cold,
			func(t *target) error { return w.prepare(b.dir(t)) },
			func(t *target) error { return w.run(b.dir(t)) }))
		fmt.Fprintf(os.Stderr, " done\n")
	}
	if b.c.only != "" {
		return
	}
	b.viewWorkloads()
	b.sessionsWalk()
	b.dockerRun()
	b.manyBinds()
	b.cliAtScale()
	b.searchAtScale()
	b.textView()
	b.takeover()
	b.csiPublish()
	b.agentWorkload()
	b.syncWorkload()
	b.roundTrips() // last: it stops the bench's mount
}

// sessionsWalk is du over c.duWalk sessions on every target, then the daemon's RSS after walking them all.
func (b *bench) sessionsWalk() {
	b.duSessions()
	for _, m := range []*target{b.mount, b.free} {
		if m != nil {
			b.walkedRSS(m)
		}
	}
}

// duSessions is du over c.duWalk sessions on every target.
func (b *bench) duSessions() {
	ids := make([]string, b.c.duWalk)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i+1)
	}
	// At least 5 rounds: the first is cold everywhere, and through FUSE the second pays once what the kernel asks
	// again after a folder's first listing (it marks the folder's atime stale then: a GETATTR per folder at the
	// next stat, which no answer of the daemon can spare); the median is a walk of sessions walked before.
	b.perTarget(fmt.Sprintf("du of %d sessions", len(ids)), max(b.c.runs, 5), func(t *target) error {
		dirs := make([]string, len(ids))
		for i, id := range ids {
			dirs[i] = t.sessionDir(id)
		}
		_, err := duWalk(dirs)
		return err
	})
}

// walkedRSS walks every session through the mount m, then records its daemon's RSS and PSS.
func (b *bench) walkedRSS(m *target) {
	suffix := ""
	if m == b.free {
		suffix = " (--confine off)"
	}
	all, err := os.ReadDir(filepath.Join(m.root, "sessions"))
	if err != nil {
		b.skip("RSS%s: %v", suffix, err)
		return
	}
	dirs := make([]string, len(all))
	for i, e := range all {
		dirs[i] = m.sessionDir(e.Name())
	}
	if _, err := duWalk(dirs); err != nil {
		b.skip("RSS walk%s: %v", suffix, err)
		return
	}
	b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("daemon RSS after walking %d sessions%s", len(dirs), suffix),
		Value: float64(daemonRSS(m.pid, "VmRSS:")) / (1 << 20), Unit: "MiB", Goal: "<= 100 MiB"},
		figure{Name: fmt.Sprintf("daemon PSS after walking %d sessions%s (the binary's pages shared by daemon and helper counted once)", len(dirs), suffix),
			Value: float64(daemonRSS(m.pid, "Pss:")) / (1 << 20), Unit: "MiB", Goal: "<= 100 MiB"})
}

// dockerRun times `docker run` of a trivial command with the session bound through the mount and plainly.
func (b *bench) dockerRun() {
	cli, err := dockerClient()
	if err != nil {
		b.skip("docker run: no Docker engine answers")
		return
	}
	defer cli.Close()
	const img = "sessionfs-bench-busybox:latest"
	if _, err := cli.ImageInspect(context.Background(), img); err != nil {
		if err := testimage.Import(cli, img, nil); err != nil {
			b.skip("docker run: build the busybox image: %v", err)
			return
		}
	}
	b.perTarget("docker run true (session bound at /session)", max(b.c.runs, 5), func(t *target) error {
		return dockerTrue(cli, img, t.sessionDir(benchSession))
	})
}

// perTarget times work on every target, runs times each (interleaved), and records the medians as one result.
func (b *bench) perTarget(name string, runs int, work func(t *target) error) {
	b.Results = append(b.Results, b.measure(name, runs, false, nil, work))
}

// measure times work on every target, runs times each, the targets interleaved (each round begun at another
// one, so drift and the last place's writeback hit every place alike), with prepare (when not nil) untimed before
// each run and the caches dropped after it when cold. It records the daemons' CPU during each run, from idle to
// idle: what a run's events cost the daemons after the run's end is the run's too.
func (b *bench) measure(name string, runs int, cold bool, prepare, work func(t *target) error) result {
	return b.measureOn(b.targets, name, runs, cold, prepare, work)
}

// measureOn is measure on the given targets.
func (b *bench) measureOn(targets []*target, name string, runs int, cold bool, prepare, work func(t *target) error) result {
	times, use := map[string][]time.Duration{}, map[string][]daemonUse{}
	failed := map[string]bool{}
	for run := 0; run < runs; run++ {
		for _, t := range rotated(targets, run) {
			if failed[t.name] {
				continue
			}
			if prepare != nil {
				if err := prepare(t); err != nil {
					b.skip("%s on %s: prepare: %v", name, t.name, err)
					failed[t.name] = true
					continue
				}
			}
			b.settle()
			if cold {
				_ = dropCaches()
			}
			before := b.daemonUse()
			d, err := timed(func() error { return work(t) })
			if err != nil {
				b.skip("%s on %s: %v", name, t.name, err)
				failed[t.name] = true
				continue
			}
			b.settle()
			u := b.daemonUse().sub(before)
			times[t.name] = append(times[t.name], d)
			use[t.name] = append(use[t.name], u)
			if b.c.rounds {
				fmt.Fprintf(os.Stderr, "  round %d %-10s %8.3f s  daemon: %.2f s CPU, %d wake-ups, %d reads\n",
					run+1, t.name, d.Seconds(), u.CPU.Seconds(), u.Wakeups, u.Reads)
			}
		}
	}
	r := newResult(name)
	for place, ts := range times {
		r.add(place, ts)
		if len(b.daemonPids()) > 0 {
			r.addUse(place, use[place])
		}
	}
	return r
}

func dockerTrue(cli *client.Client, img, src string) error {
	ctx := context.Background()
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"true"}, WorkingDir: "/session/workspace"},
		&container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeBind, Source: src, Target: "/session"}}}, nil, nil, "")
	if err != nil {
		return err
	}
	defer cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	wait, errs := cli.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return err
	}
	select {
	case w := <-wait:
		if w.StatusCode != 0 {
			return fmt.Errorf("exit %d", w.StatusCode)
		}
	case err := <-errs:
		return err
	}
	return nil
}

// places are the file-by-file table's places, in its order: the plain folder first, the baseline of every ratio.
var places = []string{"plain", "store", "sessionfs", "unconfined", "bindfs", "floor"}

func (b *bench) report(w io.Writer) {
	fmt.Fprintf(w, "\nsessionfs benchmark, %s, %s\n", b.Date, b.Machine)
	fmt.Fprintf(w, "%d interleaved rounds (du and docker run true at least 5); seconds: median (min-max); place/plain: the median "+
		"of each round's ratio to the same round's plain folder (min-max); plain: a folder beside the store that no daemon "+
		"watches; store: the store's folder while the daemon runs; sessionfs: through the mount (a session's workspace is a "+
		"bind); floor: a bare FUSE mount of only the folders on the way to a workspace with a plain folder bound there, what any FUSE "+
		"mount costs a path to a bind (floor.go); daemon CPU and wake-ups: what the sessionfs daemons and helpers used meanwhile (medians)\n\n", b.c.runs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload"}
	for _, p := range places {
		head = append(head, p+" s")
	}
	for _, p := range places[1:] {
		head = append(head, p+"/plain")
	}
	for _, p := range places[1:4] {
		head = append(head, "cpu "+p, "wake-ups "+p)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range b.Results {
		row := []string{r.Workload}
		for _, p := range places {
			row = append(row, spreadSecs(r.Runs[p]))
		}
		for _, p := range places[1:] {
			row = append(row, pairedSpread(r.Runs[p], r.Runs["plain"]))
		}
		for _, p := range places[1:4] {
			row = append(row, cpuSecs(r.CPU, p), wakeups(r.WakeupRuns[p]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, f := range b.Figures {
		fmt.Fprintf(w, "%s: %.1f %s (goal %s)\n", f.Name, f.Value, f.Unit, f.Goal)
	}
	for _, r := range b.RoundTrips {
		fmt.Fprintln(w, r)
	}
	for _, s := range b.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
}

// pairedSpread prints the median of the rounds' ratios a[i]/b[i] and their range: each round's places ran one
// after the other, so a ratio within a round cancels the machine's drift between rounds.
func pairedSpread(a, b []float64) string {
	rs := pairedRatios(a, b)
	if len(rs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx (%.2f-%.2f)", medianFloat(rs), slices.Min(rs), slices.Max(rs))
}

// wakeups prints the median of the daemons' wake-ups over runs, "-" when not measured.
func wakeups(runs []int64) string {
	if len(runs) == 0 {
		return "-"
	}
	s := slices.Clone(runs)
	slices.Sort(s)
	return fmt.Sprint(s[len(s)/2])
}

// cpuSecs prints a place's daemon CPU, "-" when not measured (a 0 measured is printed: it is the point).
func cpuSecs(cpu map[string]float64, place string) string {
	v, ok := cpu[place]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func (b *bench) writeJSON(path string) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func median(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func secs(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", s)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func machine() string {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("Linux %s, %d cores", strings.TrimSpace(string(release)), runtime.NumCPU())
}

// rotated is s begun at its k-th element (modulo its length): each run starts with another place, so no place
// always follows the same one and pays for its writeback, or for its warm-up.
func rotated[T any](s []T, k int) []T {
	if len(s) == 0 {
		return s
	}
	k %= len(s)
	return append(append([]T(nil), s[k:]...), s[:k]...)
}

// dockerClient is a client of the engine the environment names (DOCKER_HOST), once it answers.
func dockerClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

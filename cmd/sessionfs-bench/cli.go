package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The CLI at scale: what `sessionfs ls`, `ls -q` and `find UUID` take on the bench's store (c.sessions sessions),
// the mount running, as a person types them.

// plantedUUID is the conversation of the i-th of the sessions plantTranscripts gives one.
func plantedUUID(i int) string { return fmt.Sprintf("5e55f00d-0000-4000-8000-%012d", i) }

// plantedSessions are the sessions of a store of n that hold a real Claude transcript, so find has one to find
// among n sessions (the others hold a transcript whose name is no uuid).
func plantedSessions(n int) []int {
	if n < 4 {
		return nil
	}
	return []int{n / 3, 2 * n / 3, n - 1}
}

// plantTranscripts writes a short Claude transcript, named by its uuid, into plantedSessions(n) of store.
func plantTranscripts(store string, n int) error {
	for _, i := range plantedSessions(n) {
		uuid := plantedUUID(i)
		lines := fmt.Sprintf(`{"type":"user","sessionId":%q,"cwd":"/session/workspace","message":{"role":"user","content":"hello"}}`+"\n"+
			`{"type":"assistant","sessionId":%q,"message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}`+"\n", uuid, uuid)
		p := filepath.Join(store, "sessions", fmt.Sprintf("s%05d", i), ".claude", "projects", "-session-workspace", uuid+".jsonl")
		if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cliAtScale times the CLI's listing and finding commands, c.cliRuns times each, interleaved.
func (b *bench) cliAtScale() {
	defer b.copiedAtScale() // after the page: a store of its own
	defer b.uiAtScale()     // the web page's list of the same store, beside these rows
	planted := plantedSessions(b.c.sessions)
	if len(planted) == 0 {
		b.skip("the CLI at scale: the store holds %d sessions (-sessions)", b.c.sessions)
		return
	}
	uuid := plantedUUID(planted[1])
	cmds := []struct {
		name string
		args []string
		goal string
		want string // what its output must hold (timedCLI)
	}{
		{"sessionfs ls", []string{"ls"}, "< 200 ms", benchSession},
		{"sessionfs ls -q", []string{"ls", "-q"}, "< 100 ms", benchSession},
		{"sessionfs find UUID", []string{"find", uuid}, "< 50 ms", fmt.Sprintf("s%05d", planted[1])},
	}
	times := make([][]time.Duration, len(cmds))
	for run := 0; run < b.c.cliRuns; run++ {
		for k := range cmds {
			k = (k + run) % len(cmds)
			d, err := timedCLI(b.c.sessionfs, b.store, cmds[k].want, cmds[k].args...)
			if err != nil {
				b.skip("%s: %v", cmds[k].name, err)
				return
			}
			times[k] = append(times[k], d)
		}
	}
	for k, c := range cmds {
		b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("%s on %d sessions (median of %d)", c.name, b.c.sessions, len(times[k])),
			Value: ms(median(times[k])), Unit: "ms", Goal: c.goal})
	}
}

// copiedAtScale times the first `sessionfs ls` of a store whose c.sessions sessions were all just written into it,
// as a copy, a restored backup or a sync writes them (the index has a record of none, so the first ls scans and
// sizes every one), and the next ls: the goal is the first at most a few times the steady one. The
// sessions' files are in the page cache, as right after a copy. No mount serves that store. du -s of the same
// sessions is timed beside them: the first ls sizes every session, which du alone costs.
func (b *bench) copiedAtScale() {
	store := filepath.Join(b.c.dir, "store-copied")
	defer os.RemoveAll(store)
	fmt.Fprintf(os.Stderr, "making a store of %d sessions in %s, for the first ls\n", b.c.sessions, store)
	if err := makeSessions(store, b.c.sessions); err != nil {
		b.skip("the first ls of copied sessions: %v", err)
		return
	}
	// Round 1 follows the copy; each next round removes the index file first, so every session is unseen again,
	// its files as warm as after the copy. du -s times, each round, what sizing every session costs alone: its
	// first run writes back the access time of each folder it lists (ls reads them with O_NOATIME), so it is
	// timed from its second run on.
	du := func() error { return exec.Command("du", "-s", filepath.Join(store, "sessions")).Run() }
	var firsts, nexts, dus []time.Duration
	for r := range b.c.runs {
		if r > 0 {
			if err := os.Remove(filepath.Join(store, "index", "sessions")); err != nil {
				b.skip("the first ls of copied sessions: %v", err)
				return
			}
		}
		first, err := timedCLI(b.c.sessionfs, store, benchSession, "ls")
		if err != nil {
			b.skip("the first ls of copied sessions: %v", err)
			return
		}
		next, err := timedCLI(b.c.sessionfs, store, benchSession, "ls")
		if err != nil {
			b.skip("the next ls of copied sessions: %v", err)
			return
		}
		if r == 0 {
			if err := du(); err != nil {
				b.skip("du -s of the copied sessions: %v", err)
				return
			}
		}
		d, err := timed(du)
		if err != nil {
			b.skip("du -s of the copied sessions: %v", err)
			return
		}
		firsts, nexts, dus = append(firsts, first), append(nexts, next), append(dus, d)
	}
	spread := func(ds []time.Duration) string {
		return fmt.Sprintf("median of %d, %.0f-%.0f ms", len(ds), ms(slices.Min(ds)), ms(slices.Max(ds)))
	}
	b.Figures = append(b.Figures,
		figure{Name: fmt.Sprintf("the first sessionfs ls after %d sessions were copied into a store, no mount (%s)", b.c.sessions, spread(firsts)),
			Value: ms(median(firsts)), Unit: "ms", Goal: "< 200 ms, a few times the next"},
		figure{Name: fmt.Sprintf("the next sessionfs ls of that store (%s)", spread(nexts)), Value: ms(median(nexts)), Unit: "ms", Goal: "< 200 ms"},
		figure{Name: fmt.Sprintf("du -s of that store's sessions: what sizing them costs alone (%s)", spread(dus)),
			Value: ms(median(dus)), Unit: "ms", Goal: "-"})
}

// timedCLI times the sessionfs binary bin run with args on store; its output must hold want, so a fast failure is
// not timed as an answer.
func timedCLI(bin, store, want string, args ...string) (time.Duration, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+store)
	var out []byte
	d, err := timed(func() (err error) { out, err = cmd.CombinedOutput(); return err })
	if err == nil && !strings.Contains(string(out), want) {
		err = fmt.Errorf("its output lacks %s", want)
	}
	if err != nil {
		return 0, fmt.Errorf("%v: %.300s", err, out)
	}
	return d, nil
}

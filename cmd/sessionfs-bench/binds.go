package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/mount"
)

// manyBinds measures what bound sessions cost the machine, at the default limit and at 1,000: Docker (runc)
// copies the whole mount table into every container it starts, and `sessionfs ls` and the mount's start-up should
// not notice. The bench's mount is stopped meanwhile (a store is mounted once) and started again after.
func (b *bench) manyBinds() {
	if os.Geteuid() != 0 {
		b.skip("bound sessions: binds need root")
		return
	}
	cli, err := dockerClient()
	if err == nil {
		defer cli.Close()
	}
	const img = "sessionfs-bench-busybox:latest"
	src := filepath.Join(b.store, "sessions", benchSession)
	runs := max(b.c.runs, 5)
	measure := func() (docker, ls time.Duration, err error) {
		var dt, lt []time.Duration
		for i := 0; i < runs; i++ {
			if cli != nil {
				d, err := timed(func() error { return dockerTrue(cli, img, src) })
				if err != nil {
					return 0, 0, err
				}
				dt = append(dt, d)
			}
			d, err := timed(func() error {
				cmd := exec.Command(b.c.sessionfs, "ls", "-q")
				cmd.Env = append(os.Environ(), "SESSIONFS_STORE="+b.store)
				return cmd.Run()
			})
			if err != nil {
				return 0, 0, err
			}
			lt = append(lt, d)
		}
		return median(dt), median(lt), nil
	}
	b.mount.stop()
	defer b.restartMount()
	dockerNone, lsNone, err := measure()
	if err != nil {
		b.skip("bound sessions: %v", err)
		return
	}
	for _, n := range []int{mount.DefaultMaxBinds, 1000} {
		if b.c.sessions < n {
			b.skip("%d bound sessions: the store holds %d sessions (-sessions)", n, b.c.sessions)
			continue
		}
		start := time.Now()
		t, up, err := startSessionfs(b.c.sessionfs, b.store, filepath.Join(b.c.dir, "mnt-binds"), "--max-binds", fmt.Sprint(n))
		if err != nil {
			b.skip("%d bound sessions: %v", n, err)
			return
		}
		for boundSessions(t.root) < n && time.Since(start) < time.Minute {
			time.Sleep(10 * time.Millisecond)
		}
		bound, took := boundSessions(t.root), time.Since(start)
		table, _ := os.ReadFile("/proc/self/mountinfo")
		dockerMany, lsMany, err := measure()
		t.stop()
		if bound < n || err != nil {
			b.skip("%d bound sessions: %d bound after a minute; %v", n, bound, err)
			continue
		}
		b.Figures = append(b.Figures,
			figure{Name: fmt.Sprintf("mount start-up with %d sessions, %d of them to bind", b.c.sessions, n), Value: ms(up), Unit: "ms", Goal: "< 100 ms"},
			figure{Name: fmt.Sprintf("time until %d sessions are bound (their workspaces; app and mcps are empty)", n), Value: ms(took), Unit: "ms", Goal: "(none)"},
			figure{Name: fmt.Sprintf("mount table with %d sessions bound", n), Value: float64(strings.Count(string(table), "\n")), Unit: "lines", Goal: "(none)"},
			figure{Name: fmt.Sprintf("sessionfs ls with %d sessions bound / with none", n), Value: float64(lsMany) / float64(lsNone), Unit: "x", Goal: "(none)"})
		if cli != nil {
			b.Figures = append(b.Figures, figure{Name: fmt.Sprintf("docker run true with %d sessions bound / with none (%.0f / %.0f ms)", n, ms(dockerMany), ms(dockerNone)),
				Value: float64(dockerMany) / float64(dockerNone), Unit: "x", Goal: "<= 1.2x"})
		} else {
			b.skip("docker run true with %d sessions bound: no Docker engine answers", n)
		}
	}
}

// restartMount starts the bench's mount again (after a measure that needed the store to itself), in place, so
// every list of targets sees the new one.
func (b *bench) restartMount() {
	m, _, err := startSessionfs(b.c.sessionfs, b.store, b.mount.root)
	if err != nil {
		b.skip("restart the bench's mount: %v", err)
		return
	}
	*b.mount = *m
	if !waitBound(m.sessionDir(benchSession), 5*time.Second) {
		b.skip("the bench session's workspace was not bound over the restarted mount within 5 s")
	}
}

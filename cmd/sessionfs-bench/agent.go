package main

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sessionfs/sessionfs/internal/testimage"
)

// The agent workload: what an agent does in its workspace (untar a source tree, git add and commit, git status,
// grep -r, du, find, rm -rf), as one shell script that times each step itself, run the same way in every place
// an agent can work: natively on the store, through the mount, through bindfs, inside `sessionfs exec`, and in
// a container, bound plainly (docker run -v) and by `sessionfs run --backend docker`.

// agentScript times each step with GNU date and prints "step nanoseconds" lines. $1 is the tarball, $2 the folder.
const agentScript = `#!/bin/sh
set -e
T=$1 D=$2
# The same GNU tools everywhere: a busybox sh would otherwise run its own applets first.
for t in tar git grep du find rm date mkdir; do
	if [ -x /usr/bin/$t ]; then eval "$t() { /usr/bin/$t \"\$@\"; }"; fi
done
step() { name=$1; shift; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "step $name failed" >&2; exit 1; }; e=$(date +%s%N); echo "$name $((e - s))"; }
gitadd() { git init -q . && git add -A && git -c user.name=bench -c user.email=bench@localhost commit -qm tree; }
grepr() { grep -r sessionfs-needle . || true; }
rm -rf "$D"; mkdir -p "$D"; cd "$D"
step untar tar xf "$T"
step git-add gitadd
step git-status git status --porcelain
step grep-r grepr
step du-s du -s .
step find find . -type f
cd ..
step rm-rf rm -rf "$D"
`

// agentSteps, in the order the script runs them.
var agentSteps = []string{"untar", "git-add", "git-status", "grep-r", "du-s", "find", "rm-rf"}

// agentTools are copied (with their libraries) into the benchmark's image, so the container runs the same tools
// as the host.
var agentTools = []string{"/usr/bin/git", "/usr/bin/tar", "/usr/bin/grep", "/usr/bin/du", "/usr/bin/find", "/usr/bin/rm", "/usr/bin/date", "/usr/bin/mkdir"}

const agentImage = "sessionfs-bench-agent:latest"

// agentTree writes a tarball of at least c.treeFiles regular files (each at most 1 MiB) from src, the Go module
// cache by default: a real source tree of this machine.
func agentTree(src, dst string, n int) (files int, size int64, err error) {
	f, err := os.Create(dst)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || files >= n {
			if files >= n {
				return fs.SkipAll
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > 1<<20 {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime()}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, in)
		in.Close()
		files++
		size += fi.Size()
		return err
	})
	if err != nil {
		return files, size, err
	}
	if files < n {
		return files, size, fmt.Errorf("%s holds only %d files (want %d; -tree-src names another tree)", src, files, n)
	}
	if err := tw.Close(); err != nil {
		return files, size, err
	}
	if err := bw.Flush(); err != nil {
		return files, size, err
	}
	return files, size, f.Sync()
}

// agentPlace is one place the script runs: how to run it, and the script, tarball and folder as it sees them.
type agentPlace struct {
	name string
	run  func(script, tarball, dir string) *exec.Cmd
	// root is the bench session as the place sees it.
	root string
}

// agentWorkload runs the script in every place, c.runs times each (interleaved), and records each step's median.
func (b *bench) agentWorkload() {
	src := b.c.treeSrc
	if src == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			b.skip("agent workload: no -tree-src and no go to find the module cache: %v", err)
			return
		}
		src = strings.TrimSpace(string(out))
	}
	app := filepath.Join(b.store, "sessions", benchSession, "app")
	fmt.Fprintf(os.Stderr, "agent workload: a tarball of %d files from %s\n", b.c.treeFiles, src)
	files, size, err := agentTree(src, filepath.Join(app, "agent-tree.tar"), b.c.treeFiles)
	if err != nil {
		b.skip("agent workload: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(app, "agent.sh"), []byte(agentScript), 0o755); err != nil {
		b.skip("agent workload: %v", err)
		return
	}
	if b.freeStore != "" { // the unconfined mount's store runs the same script on the same tarball
		freeApp := filepath.Join(b.freeStore, "sessions", benchSession, "app")
		for _, name := range []string{"agent-tree.tar", "agent.sh"} {
			_ = os.Remove(filepath.Join(freeApp, name))
			if err := os.Link(filepath.Join(app, name), filepath.Join(freeApp, name)); err != nil {
				b.skip("agent workload: %v", err)
				return
			}
		}
	}
	env := append(os.Environ(), "SESSIONFS_STORE="+b.store)
	host := func(script, tarball, dir string) *exec.Cmd { return exec.Command("sh", script, tarball, dir) }
	var places []agentPlace
	for _, t := range b.targets {
		places = append(places, agentPlace{name: t.name, root: t.sessionDir(benchSession), run: host})
	}
	places = append(places, agentPlace{name: "exec", root: b.mount.sessionDir(benchSession),
		run: func(script, tarball, dir string) *exec.Cmd {
			return exec.Command(b.c.sessionfs, "exec", benchSession, "--", "sh", script, tarball, dir)
		}})
	if b.agentImage() {
		places = append(places,
			agentPlace{name: "docker-bind", root: "/session", run: func(script, tarball, dir string) *exec.Cmd {
				return exec.Command("docker", "run", "--rm", "-v", filepath.Join(b.store, "sessions", benchSession)+":/session",
					"-w", "/session/workspace", agentImage, "sh", script, tarball, dir)
			}},
			// A person's own container on the mount (not sessionfs run): Docker binds recursively, so it gets the
			// mount's binds of the heavy folders.
			agentPlace{name: "docker-mount", root: "/session", run: func(script, tarball, dir string) *exec.Cmd {
				return exec.Command("docker", "run", "--rm", "-v", b.mount.sessionDir(benchSession)+":/session",
					"-w", "/session/workspace", agentImage, "sh", script, tarball, dir)
			}},
			agentPlace{name: "docker-sessionfs", root: "/session", run: func(script, tarball, dir string) *exec.Cmd {
				return exec.Command(b.c.sessionfs, "run", "--backend", "docker", "--image", agentImage, benchSession, "--",
					"sh", script, tarball, dir)
			}})
	}
	times := map[string]map[string][]time.Duration{} // step -> place -> runs
	for run := 0; run < b.c.runs; run++ {
		for _, p := range rotated(places, run) {
			fmt.Fprintf(os.Stderr, "agent workload, run %d, %s\n", run+1, p.name)
			syscall.Sync() // the last place's writeback is not this one's to pay
			cmd := p.run(p.root+"/app/agent.sh", p.root+"/app/agent-tree.tar", p.root+"/workspace/agent-"+p.name)
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.skip("agent workload in %s: %v: %s", p.name, err, strings.TrimSpace(stderr.String()))
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				step, ns, ok := strings.Cut(line, " ")
				n, err := strconv.ParseInt(ns, 10, 64)
				if !ok || err != nil {
					continue
				}
				if times[step] == nil {
					times[step] = map[string][]time.Duration{}
				}
				times[step][p.name] = append(times[step][p.name], time.Duration(n))
			}
		}
	}
	b.Agent = &agentResult{Files: files, Bytes: size}
	for _, step := range agentSteps {
		r := newResult(step)
		for place, ts := range times[step] {
			r.add(place, ts)
		}
		b.Agent.Steps = append(b.Agent.Steps, r)
	}
}

// agentResult is the agent workload's table.
type agentResult struct {
	Files int      `json:"files"`
	Bytes int64    `json:"bytes"`
	Steps []result `json:"steps"`
}

// agentImage imports the image the containers run (busybox and the host's own tools), once.
func (b *bench) agentImage() bool {
	if _, err := exec.LookPath("docker"); err != nil {
		b.skip("agent workload in containers: no docker command")
		return false
	}
	cli, err := dockerClient()
	if err != nil {
		b.skip("agent workload in containers: no Docker engine answers")
		return false
	}
	defer cli.Close()
	extra := append([]string(nil), agentTools...)
	for _, tool := range agentTools {
		libs, err := testimage.SharedLibs(tool)
		if err != nil {
			b.skip("agent workload in containers: %s: %v", tool, err)
			return false
		}
		extra = append(extra, libs...)
	}
	if err := testimage.Import(cli, agentImage, dedupe(extra)); err != nil {
		b.skip("agent workload in containers: build the image: %v", err)
		return false
	}
	return true
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// reportAgent prints the agent workload: each place's median, and the ratios that matter: a sessionfs run
// against native (exec) and against a plain bind (docker), the mount and bindfs against native, and a person's own
// docker run -v on the mount against the same on the store.
func (b *bench) reportAgent(w io.Writer) {
	a := b.Agent
	if a == nil {
		return
	}
	fmt.Fprintf(w, "\nagent workload: %d files, %.0f MiB (medians of %d runs)\n\n", a.Files, float64(a.Bytes)/(1<<20), b.c.runs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tnative s\texec s\tmount s\tunconfined s\tbindfs s\tdocker -v s\tdocker -v mount s\tsessionfs run s\texec/native\tmount/native\tunconfined/native\tbindfs/native\trun/docker -v\t-v mount/-v store\t-v mount/native\t")
	for _, r := range a.Steps {
		s := r.Seconds
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Workload,
			secs(s["native"]), secs(s["exec"]), secs(s["sessionfs"]), secs(s["unconfined"]), secs(s["bindfs"]), secs(s["docker-bind"]), secs(s["docker-mount"]), secs(s["docker-sessionfs"]),
			ratio(s["exec"], s["native"]), ratio(s["sessionfs"], s["native"]), ratio(s["unconfined"], s["native"]), ratio(s["bindfs"], s["native"]), ratio(s["docker-sessionfs"], s["docker-bind"]),
			ratio(s["docker-mount"], s["docker-bind"]), ratio(s["docker-mount"], s["native"]))
	}
	tw.Flush()
}

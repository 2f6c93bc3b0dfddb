package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The daemon's CPU: what the mounts' daemons (and their privileged helpers) spent while a piece of work ran,
// whichever place it ran in. Work in the plain folder should cost them nothing; work in the store's folder costs
// what the watcher does with its events; work through a bind should cost nothing either, since the kernel serves
// it.

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux ABI (sysconf is
// out of reach without cgo).
const clockTicks = 100

// daemonPids are the pids of the running sessionfs daemons (the bench's mount and the unconfined one).
func (b *bench) daemonPids() []int {
	var pids []int
	for _, m := range []*target{b.mount, b.free} {
		if m != nil && m.pid > 0 {
			pids = append(pids, m.pid)
		}
	}
	return pids
}

// daemonCPU is the CPU time the daemons and their children have used so far.
func (b *bench) daemonCPU() time.Duration { return b.daemonUse().CPU }

// procTicks is utime+stime of process pid (all its threads), 0 if it is gone.
func procTicks(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields are counted after its closing one.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 { // f[0] is field 3 (state): utime is field 14, stime 15
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// settle waits until the daemons are idle (their CPU unchanged over 50 ms, at most 5 s), so the events a piece of
// work queued are handled, and counted, before the next reading.
func (b *bench) settle() {
	if len(b.daemonPids()) == 0 {
		return
	}
	last := b.daemonCPU()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		now := b.daemonCPU()
		if now == last {
			return
		}
		last = now
	}
}

// daemonUse is what the daemons have used so far: CPU, and what says why (each wake-up is a context switch of
// one of their threads: a timer firing, an inotify event or FUSE request arriving; each read a FUSE request
// or a batch of inotify events fetched).
type daemonUse struct {
	CPU     time.Duration
	Wakeups int64 // voluntary and involuntary context switches of every thread
	Reads   int64 // read syscalls (syscr)
}

func (u daemonUse) sub(o daemonUse) daemonUse {
	return daemonUse{CPU: u.CPU - o.CPU, Wakeups: u.Wakeups - o.Wakeups, Reads: u.Reads - o.Reads}
}

// daemonUse sums the daemons' and their children's use so far.
func (b *bench) daemonUse() daemonUse {
	var u daemonUse
	for _, pid := range b.daemonPids() {
		for _, p := range append([]int{pid}, children(pid)...) {
			u.CPU += time.Duration(procTicks(p)) * time.Second / clockTicks
			u.Wakeups += procSwitches(p)
			u.Reads += procField(fmt.Sprintf("/proc/%d/io", p), "syscr:")
		}
	}
	return u
}

// children are the pids process pid started (listed by the thread that started them: in Go, any of its threads).
func children(pid int) []int {
	var pids []int
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, l := range lists {
		data, _ := os.ReadFile(l)
		for _, c := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(c); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// procSwitches is the context switches of every thread of process pid.
func procSwitches(pid int) int64 {
	var n int64
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, t := range tasks {
		n += procField(t, "voluntary_ctxt_switches:") + procField(t, "nonvoluntary_ctxt_switches:")
	}
	return n
}

// procField is the number after field in the /proc file path, 0 if absent.
func procField(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

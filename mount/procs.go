package mount

import (
	"os"
	"runtime"
)

// go-fuse serves requests with a pool of readers, each waiting in read(2) on /dev/fuse; it sizes the pool by
// GOMAXPROCS when it mounts (at least 2, at most 16), and one more reader may be waiting while a request is
// handed over. When waiting readers hold every P, the runtime's sysmon takes Ps back from them every 20 µs under
// load: a handoff and a thread wake-up per request, a fifth of the daemon's CPU in an untar through the mount,
// and each wake-up is a costly context switch in a VM. With two Ps more than the readers that can wait, one P is
// always idle, sysmon leaves the readers' syscalls alone and backs off. Measured on 2 cores (agent workload through
// the mount, medians of 3): untar -10%, git add -13%, grep -r -16%, du -19%, daemon CPU -11%.

// fuseReaders is how many go-fuse readers can wait in read(2) at once, given GOMAXPROCS at mount time.
func fuseReaders(procs int) int {
	return min(max(procs, 2), 16) + 1
}

// spareProcs raises GOMAXPROCS after the mount so a P stays free of the readers, unless the user set
// GOMAXPROCS. It returns the new value (0: unchanged).
func spareProcs(mountProcs int) int {
	if os.Getenv("GOMAXPROCS") != "" {
		return 0
	}
	n := fuseReaders(mountProcs) + 1
	if n <= runtime.GOMAXPROCS(0) {
		return 0
	}
	runtime.GOMAXPROCS(n)
	return n
}

package confine

import (
	"fmt"
	"strings"
	"time"
)

// Modes of --confine.
const (
	Off    = "off"    // the serving process keeps what the daemon has (for comparison, and kernels that break it)
	On     = "on"     // the default: capabilities, seccomp, and Landlock where the kernel has it
	Strict = "strict" // as on, and a kernel without Landlock is an error rather than a warning
)

// Options say how the serving process confines itself.
type Options struct {
	Mode    string // Off, On or Strict ("" is On)
	Seccomp string // SeccompErrno, SeccompKill or SeccompLog ("" is SeccompErrno)
}

// Check reports a bad mode.
func (o Options) Check() error {
	switch o.Mode {
	case "", Off, On, Strict:
	default:
		return fmt.Errorf("--confine %q: want %s, %s or %s", o.Mode, On, Strict, Off)
	}
	switch o.Seccomp {
	case "", SeccompErrno, SeccompKill, SeccompLog:
	default:
		return fmt.Errorf("--seccomp %q: want %s, %s or %s", o.Seccomp, SeccompErrno, SeccompKill, SeccompLog)
	}
	return nil
}

// Report says what confinement is in force.
type Report struct {
	Landlock int    // the kernel's Landlock ABI in force (0: none)
	Seccomp  string // the seccomp mode ("" : none)
	Caps     string // the effective capabilities kept
}

func (r Report) String() string {
	if r.Seccomp == "" {
		return "unconfined (--confine off)"
	}
	ll := fmt.Sprintf("Landlock ABI %d (only the store)", r.Landlock)
	if r.Landlock == 0 {
		ll = "no Landlock (the kernel lacks it)"
	}
	caps := r.Caps
	if caps == "" {
		caps = "none"
	}
	return fmt.Sprintf("%s; seccomp allow-list (%s); capabilities %s", ll, r.Seccomp, strings.ToLower(caps))
}

// Serving confines the calling process (every thread) to serving the store at root, with scratch (if not "") a
// folder of its own it may write too: capabilities first (dropping them needs SETPCAP), then Landlock, then
// seccomp (last: it refuses what the first two need). It is one-way. last, if set, runs just before the
// capabilities go, while the process holds all it started with.
func Serving(root, scratch string, o Options, last func()) (Report, error) {
	if o.Mode == Off {
		return Report{}, nil
	}
	// Go loads the local time zone when it first formats a time: now, while /etc/localtime can still be read.
	_, _ = time.Now().Local().Zone()
	if err := dropCaps(last); err != nil {
		return Report{}, err
	}
	rw := []string{root}
	if scratch != "" {
		rw = append(rw, scratch)
	}
	abi, err := restrictFiles(o.Mode == Strict, rw...)
	if err != nil {
		return Report{}, err
	}
	mode := o.Seccomp
	if mode == "" {
		mode = SeccompErrno
	}
	if err := filterCalls(mode); err != nil {
		return Report{}, fmt.Errorf("seccomp: %w", err)
	}
	caps, _ := Held(0)
	return Report{Landlock: abi, Seccomp: mode, Caps: caps}, nil
}

// Package testsummary prints, shortly before a test binary's -timeout expires, which of its top-level tests passed,
// failed, were skipped, are running and never started: Go's timeout panic names only the running ones, so a suite
// cut off at its cap otherwise says nothing of the rest. The panic and its goroutine dump follow as ever.
//
//	func TestMain(m *testing.M) { os.Exit(testsummary.Run(m)) }
package testsummary

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// maxLead is how long before the -timeout the summary is printed (a short timeout's quarter): ample for a timer
// and one write even on a loaded machine, and short, since a test that ends or starts meanwhile is shown as it
// was (Go's panic then names the tests running at the timeout itself).
const maxLead = 10 * time.Second

// Run runs m's tests as m.Run does, and prints the summary to stderr shortly before the -timeout (when there is
// one) expires. A test binary whose tests it cannot see runs them without a summary, and says so.
func Run(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse() // -test.timeout, -test.run and -test.skip are known only once parsed; m.Run parses no more
	}
	tests, err := testsOf(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary: no summary at the timeout:", err)
		return m.Run()
	}
	r := newRecorder(selected(*tests, flagString("test.run"), flagString("test.skip")))
	for i, t := range *tests {
		(*tests)[i].F = r.wrap(t.Name, t.F)
	}
	defer r.watch(os.Stderr, timeout())()
	return m.Run()
}

// testsOf is m's list of tests. testing offers no hook at a test's start or end, and the tests themselves call no
// common helper: wrapping each test's function in this list, which testing.M keeps unexported, is the one reach
// into testing's internals, checked so a Go release that renames it costs the summary, not the run.
func testsOf(m *testing.M) (*[]testing.InternalTest, error) {
	f := reflect.ValueOf(m).Elem().FieldByName("tests")
	if !f.IsValid() || f.Type() != reflect.TypeFor[[]testing.InternalTest]() {
		return nil, errors.New("testing.M has no tests field of type []testing.InternalTest")
	}
	return (*[]testing.InternalTest)(unsafe.Pointer(f.UnsafeAddr())), nil
}

func flagString(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// timeout is -test.timeout, 0 for none.
func timeout() time.Duration {
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok {
			return d
		}
	}
	return 0
}

func lead(timeout time.Duration) time.Duration {
	return min(maxLead, timeout/4)
}

// selected is the names of tests that -test.run and -test.skip let run, decided as testing's matcher does for a
// top-level test: each pattern is alternatives (an unbracketed '|') of levels (an unbracketed '/'); -run needs an
// alternative whose first level matches, and -skip skips on an alternative of one level that matches.
func selected(tests []testing.InternalTest, run, skip string) []string {
	var names []string
	for _, t := range tests {
		if (run == "" || matches(split(run), t.Name, false)) && (skip == "" || !matches(split(skip), t.Name, true)) {
			names = append(names, t.Name)
		}
	}
	return names
}

func matches(alternatives [][]string, name string, oneLevel bool) bool {
	for _, levels := range alternatives {
		if oneLevel && len(levels) > 1 {
			continue
		}
		if ok, _ := regexp.MatchString(levels[0], name); ok { // testing exits on a bad pattern before any test
			return true
		}
	}
	return false
}

// split is a pattern's alternatives, each a list of levels, cut where testing's splitRegexp cuts.
func split(s string) [][]string {
	var alternatives [][]string
	var levels []string
	brackets, parens := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0) // an unmatched ']' is a literal
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets > 0 || parens > 0 {
				continue
			}
			levels = append(levels, s[:i])
			if s[i] == '|' {
				alternatives, levels = append(alternatives, levels), nil
			}
			s, i = s[i+1:], -1
		}
	}
	return append(alternatives, append(levels, s))
}

// recorder keeps each top-level test's start and end.
type recorder struct {
	mu      sync.Mutex
	names   []string // the tests that will run, in their order
	started []string // in the order they started
	runs    map[string]*testRun
}

// testRun is one test's latest run (-count runs it again).
type testRun struct {
	start, end time.Time
	failed     bool
	skipped    bool
}

func newRecorder(names []string) *recorder {
	return &recorder{names: names, runs: map[string]*testRun{}}
}

// wrap records f's start and, through a cleanup registered before any of its own (so it runs after them all and
// after its subtests), its end and outcome.
func (r *recorder) wrap(name string, f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		r.begin(name)
		t.Cleanup(func() { r.finish(name, t.Failed(), t.Skipped()) })
		f(t)
	}
}

func (r *recorder) begin(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[name] == nil {
		r.started = append(r.started, name)
	}
	r.runs[name] = &testRun{start: time.Now()}
}

func (r *recorder) finish(name string, failed, skipped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.runs[name]
	run.end, run.failed, run.skipped = time.Now(), failed, skipped
}

// watch prints the summary to w lead(timeout) before the timeout, and returns what stops it; a zero timeout
// watches nothing.
func (r *recorder) watch(w io.Writer, timeout time.Duration) (stop func()) {
	if timeout <= 0 {
		return func() {}
	}
	timer := time.AfterFunc(timeout-lead(timeout), func() {
		fmt.Fprint(w, r.summary(timeout)) // one write: never interleaved with a test's output
	})
	return func() { timer.Stop() }
}

// summary is the tests' state now, lead(timeout) before the timeout.
func (r *recorder) summary(timeout time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var passed, failed, skipped, running, never []string
	now := time.Now()
	for _, name := range r.started {
		run := r.runs[name]
		switch {
		case run.end.IsZero():
			running = append(running, fmt.Sprintf("%s (running for %v)", name, round(now.Sub(run.start))))
		case run.failed:
			failed = append(failed, fmt.Sprintf("%s (%v)", name, round(run.end.Sub(run.start))))
		case run.skipped:
			skipped = append(skipped, fmt.Sprintf("%s (%v)", name, round(run.end.Sub(run.start))))
		default:
			passed = append(passed, fmt.Sprintf("%s (%v)", name, round(run.end.Sub(run.start))))
		}
	}
	for _, name := range r.names {
		if r.runs[name] == nil {
			never = append(never, name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\ntest summary %v before the -timeout of %v (if it expires, Go's panic follows):\n",
		lead(timeout), timeout)
	section(&b, "passed", passed)
	section(&b, "failed", failed)
	section(&b, "skipped", skipped)
	section(&b, "running", running)
	section(&b, "never started", never)
	return b.String()
}

func section(b *strings.Builder, title string, lines []string) {
	fmt.Fprintf(b, "%s (%d):\n", title, len(lines))
	for _, l := range lines {
		fmt.Fprintf(b, "\t%s\n", l)
	}
}

func round(d time.Duration) time.Duration {
	return d.Round(10 * time.Millisecond)
}

package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Run ids. A run is named <session>/<n>: n is its number in its session (1 for the first), recorded in its Run by
// the runner when it starts, so it stays the run's while older runs are dropped past MaxRuns. Runs recorded
// before runs were numbered take their place in the list. runs, ps and logs show and take this name.

// maxRunNumber bounds a recorded number: session.json is the session's to write, and a forged number must
// neither overflow the next one nor name a file of another form.
const maxRunNumber = 1 << 30

// RunNumber is the number of the i-th recorded run.
func (m *Meta) RunNumber(i int) int {
	if n := m.Runs[i].N; n > 0 {
		return n
	}
	return i + 1
}

// NextRunNumber is the number the next run of the session gets.
func (m *Meta) NextRunNumber() int {
	next := 1
	for i := range m.Runs {
		if n := m.RunNumber(i); n >= next {
			next = n + 1
		}
	}
	return next
}

// RunIndex is the index in Runs of run number n; ok is false when no run has it. Numbers repeated in a forged
// session.json give the latest.
func (m *Meta) RunIndex(n int) (i int, ok bool) {
	for i := len(m.Runs) - 1; i >= 0; i-- {
		if m.RunNumber(i) == n {
			return i, true
		}
	}
	return 0, false
}

// RunID is the name of run n of session id.
func RunID(id string, n int) string { return id + "/" + strconv.Itoa(n) }

// ParseRunID splits a run's name into its session (as typed: an id or the start of one) and its number; a name
// with no "/n" is the session alone (n is 0: its latest run).
func ParseRunID(s string) (session string, n int, err error) {
	session, num, found := strings.Cut(s, "/")
	if !found {
		return s, 0, nil
	}
	n, err = strconv.Atoi(num)
	if err != nil || n <= 0 || n > maxRunNumber || session == "" {
		return "", 0, fmt.Errorf("run %q: want SESSION/N (N the run's number, as runs and ps show it) or SESSION for its latest run", s)
	}
	return session, n, nil
}

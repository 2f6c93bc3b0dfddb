// Package timeoutsummary is a test binary that runs past its -timeout, for testsummary's test: one test of each
// outcome, one still running at the timeout and two after it that never start.
package timeoutsummary

import (
	"os"
	"testing"
	"time"

	"github.com/sessionfs/sessionfs/internal/testsummary"
)

func TestMain(m *testing.M) { os.Exit(testsummary.Run(m)) }

func TestPasses(t *testing.T) {}

func TestFails(t *testing.T) { t.Error("fails on purpose") }

func TestSkips(t *testing.T) { t.Skip("skips on purpose") }

func TestSubtestFails(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Error("fails on purpose") })
}

func TestSleepsPastTheTimeout(t *testing.T) { time.Sleep(time.Hour) }

func TestNeverStarts(t *testing.T) {}

func TestNeverStartsEither(t *testing.T) {}

// TestFiltered is left out by the test's -test.skip: it is not a test that never started.
func TestFiltered(t *testing.T) {}

package testsummary

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSummaryBeforeTheTimeout runs a test binary whose one test sleeps past its -timeout: the summary names what
// passed, failed, was skipped, is running and never started, and Go's panic and goroutine dump still follow.
func TestSummaryBeforeTheTimeout(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "timeoutsummary.test")
	out, err := exec.Command("go", "test", "-c", "-o", exe, "./testdata/timeoutsummary").CombinedOutput()
	require.NoError(t, err, "build: %s", out)

	var stdout, stderr strings.Builder
	cmd := exec.Command(exe, "-test.timeout=4s", "-test.skip=^TestFiltered$")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), firstLines(stderr.String(), 30))
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the binary must fail: %v", err)
	assert.Equal(t, 2, exit.ExitCode(), "the timeout's panic")

	summary, panicked, found := strings.Cut(stderr.String(), "panic: test timed out after 4s")
	require.True(t, found, "Go's timeout panic still follows")
	assert.Contains(t, panicked, "goroutine ", "and its goroutine dump")
	assert.Contains(t, summary, "test summary 1s before the -timeout of 4s")
	for _, want := range []string{
		"passed (1):\n\tTestPasses (",
		"failed (2):\n\tTestFails (",
		"\tTestSubtestFails (",
		"skipped (1):\n\tTestSkips (",
		"running (1):\n\tTestSleepsPastTheTimeout (running for ",
		"never started (2):\n\tTestNeverStarts\n\tTestNeverStartsEither\n",
	} {
		assert.Contains(t, summary, want)
	}
	assert.NotContains(t, summary, "TestFiltered", "a test -test.skip leaves out never was to start")
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "")
}

// TestSelected checks the tests -run and -skip let run against what a test binary of these four tests ran.
func TestSelected(t *testing.T) {
	tests := []testing.InternalTest{{Name: "TestA"}, {Name: "TestB"}, {Name: "TestAB"}, {Name: "TestC"}}
	for _, c := range []struct {
		run, skip string
		want      []string
	}{
		{"", "", []string{"TestA", "TestB", "TestAB", "TestC"}},
		{"^TestA$", "", []string{"TestA"}},
		{"TestA", "", []string{"TestA", "TestAB"}},
		{"^TestA$/sub|TestC", "", []string{"TestA", "TestC"}},
		{"Test(A|B)$", "", []string{"TestA", "TestB"}},
		{"Test[/|]", "", nil},
		{"", "TestA", []string{"TestB", "TestC"}},
		{"", "TestA/sub", []string{"TestA", "TestB", "TestAB", "TestC"}}, // skips a subtest, not the test
		{"", "TestB|^TestC$", []string{"TestA", "TestAB"}},
		{"^TestA$|", "", []string{"TestA", "TestB", "TestAB", "TestC"}}, // an empty alternative matches all
		{"", "^TestA$/sub|TestC", []string{"TestA", "TestB", "TestAB"}},
	} {
		assert.Equal(t, c.want, selected(tests, c.run, c.skip), "-run %q -skip %q", c.run, c.skip)
	}
}

func TestLead(t *testing.T) {
	assert.Equal(t, 10*time.Second, lead(50*time.Minute))
	assert.Equal(t, time.Second, lead(4*time.Second))
}

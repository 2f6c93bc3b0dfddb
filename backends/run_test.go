package backends_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

// fake is a backend that checks what it is given and returns code and err.
type fake struct {
	t        *testing.T
	s        *layout.Store
	code     int
	err      error
	inFlight bool // the run was recorded as in progress when the backend ran
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Run(_ context.Context, spec backends.Spec) (int, error) {
	assert.Equal(f.t, "web", spec.SessionID)
	require.NotNil(f.t, spec.Folder, "the session's folder, open")
	m, err := f.s.Get("web")
	require.NoError(f.t, err)
	f.inFlight = len(m.Runs) > 0 && m.Runs[len(m.Runs)-1].End.IsZero()
	return f.code, f.err
}

// A run is one call: recorded in progress, then with its end and exit code; a backend's own failure is
// OwnFailure. The lease is one runner's at a time.
func TestRunnerRecordsRuns(t *testing.T) {
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = s.Create("web", layout.CreateOptions{})
	require.NoError(t, err)
	r, err := backends.Lease(context.Background(), s, "web", false, nil)
	require.NoError(t, err)
	_, err = backends.Lease(context.Background(), s, "web", false, nil)
	require.ErrorIs(t, err, layout.ErrRunning, "one runner per session")

	b := &fake{t: t, s: s, code: 3}
	code, err := r.Run(context.Background(), b, backends.Spec{Argv: []string{"false"}}, "img")
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	assert.True(t, b.inFlight, "recorded before it ran")

	b = &fake{t: t, s: s, code: -1, err: errors.New("no engine")}
	code, err = r.Run(context.Background(), b, backends.Spec{Argv: []string{"true"}}, "")
	assert.EqualError(t, err, "no engine")
	assert.Equal(t, backends.OwnFailure, code)

	m, err := s.Get("web")
	require.NoError(t, err)
	require.Len(t, m.Runs, 2, "each run's end replaces its start")
	assert.Equal(t, "fake", m.Runs[0].Backend)
	assert.Equal(t, "img", m.Runs[0].Image)
	assert.Equal(t, []string{"false"}, m.Runs[0].Command)
	assert.Equal(t, 3, m.Runs[0].ExitCode)
	assert.False(t, m.Runs[0].End.IsZero())
	assert.Equal(t, backends.OwnFailure, m.Runs[1].ExitCode)
	assert.Equal(t, "no engine", m.Runs[1].Error)

	require.NoError(t, r.Release())
	r, err = backends.Lease(context.Background(), s, "web", false, nil)
	require.NoError(t, err, "released")
	require.NoError(t, r.Release())
}

// printer is a backend whose command prints to the spec's streams.
type printer struct{ out, errOut string }

func (p printer) Name() string { return "local" }

func (p printer) Run(_ context.Context, spec backends.Spec) (int, error) {
	if spec.Stdout != nil {
		_, _ = io.WriteString(spec.Stdout, p.out)
	}
	if spec.Stderr != nil {
		_, _ = io.WriteString(spec.Stderr, p.errOut)
	}
	return 0, nil
}

func logOf(t *testing.T, s *layout.Store, id string, n int) string {
	t.Helper()
	old, cur, err := s.OpenRunLog(id, n)
	require.NoError(t, err)
	defer cur.Close()
	require.Nil(t, old)
	b, err := io.ReadAll(cur)
	require.NoError(t, err)
	return string(b)
}

// Each run is numbered, and what it prints reaches the user and is kept in its log; a TTY run's is not.
func TestRunnerKeepsOutput(t *testing.T) {
	s, r := leased(t)
	var out, errOut bytes.Buffer
	_, err := r.Run(context.Background(), printer{"hello\n", "oops\n"}, backends.Spec{Argv: []string{"x"}, Stdout: &out, Stderr: &errOut}, "")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", out.String(), "the user sees it as before")
	assert.Equal(t, "oops\n", errOut.String())
	assert.Equal(t, "hello\noops\n", logOf(t, s, "web", 1))

	_, err = r.Run(context.Background(), printer{"drawn\n", ""}, backends.Spec{Argv: []string{"x"}, Stdout: &out, TTY: true}, "")
	require.NoError(t, err)
	_, _, err = s.OpenRunLog("web", 2)
	assert.ErrorIs(t, err, layout.ErrNoLog, "a TTY run's output is the terminal's")

	_, err = r.Run(context.Background(), printer{"third\n", ""}, backends.Spec{Argv: []string{"x"}, Stdout: &out}, "")
	require.NoError(t, err)
	assert.Equal(t, "third\n", logOf(t, s, "web", 3))
	m, err := s.Get("web")
	require.NoError(t, err)
	for i, want := range []int{1, 2, 3} {
		assert.Equal(t, want, m.Runs[i].N)
		assert.NotEmpty(t, m.Runs[i].Host)
	}
}

// Stdout and stderr of one file (`> out 2>&1`) stay one writer, so the command's lines keep their order.
func TestRunnerKeepsOneWriterForOneFile(t *testing.T) {
	_, r := leased(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer f.Close()
	dup, err := os.OpenFile(f.Name(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer dup.Close()
	var same bool
	b := backendFunc(func(spec backends.Spec) { same = spec.Stdout == spec.Stderr })
	_, err = r.Run(context.Background(), b, backends.Spec{Argv: []string{"x"}, Stdout: f, Stderr: dup}, "")
	require.NoError(t, err)
	assert.True(t, same, "one writer for one file")
}

type backendFunc func(backends.Spec)

func (backendFunc) Name() string { return "local" }

func (f backendFunc) Run(_ context.Context, spec backends.Spec) (int, error) {
	f(spec)
	return 0, nil
}

// leased is a store with session web, and its runner, released when the test ends.
func leased(t *testing.T) (*layout.Store, *backends.Runner) {
	s, err := layout.OpenStore(t.TempDir())
	require.NoError(t, err)
	_, err = s.Create("web", layout.CreateOptions{})
	require.NoError(t, err)
	r, err := backends.Lease(context.Background(), s, "web", false, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Release() })
	return s, r
}

package backends_test

import (
	"context"
	"errors"
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

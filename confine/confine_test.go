package confine

import (
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsCheck(t *testing.T) {
	for _, o := range []Options{{}, {Mode: On}, {Mode: Strict, Seccomp: SeccompKill}, {Mode: Off}, {Seccomp: SeccompLog}} {
		assert.NoError(t, o.Check(), "%+v", o)
	}
	assert.ErrorContains(t, Options{Mode: "yes"}.Check(), `--confine "yes": want on, strict or off`)
	assert.ErrorContains(t, Options{Seccomp: "trap"}.Check(), `--seccomp "trap": want errno, kill or log`)
}

func TestReportSaysWhatHolds(t *testing.T) {
	assert.Equal(t, "unconfined (--confine off)", Report{}.String())
	assert.Equal(t, "Landlock ABI 7 (only the store); seccomp allow-list (errno); capabilities cap_chown",
		Report{Landlock: 7, Seccomp: SeccompErrno, Caps: "CAP_CHOWN"}.String())
	assert.Contains(t, Report{Seccomp: SeccompKill}.String(), "no Landlock (the kernel lacks it)")
}

// Every name on the allow-list is a system call of x86-64 or arm64 (a typo would allow nothing), and the calls
// that escape a confinement are not on it.
func TestAllowListNamesAreSystemCalls(t *testing.T) {
	amd64, err := arch.GetInfo("amd64")
	require.NoError(t, err)
	arm64, err := arch.GetInfo("arm64")
	require.NoError(t, err)
	for _, n := range append(slices.Clone(allowed), signalled...) {
		_, a := amd64.SyscallNames[n]
		_, b := arm64.SyscallNames[n]
		assert.True(t, a || b, "%s is no system call", n)
	}
	assert.NotContains(t, allowed, "mount")
	assert.NotContains(t, allowed, "unshare")
	assert.NotContains(t, allowed, "execve")
	assert.NotContains(t, allowed, "clone", "clone is allowed only without namespace flags")
}

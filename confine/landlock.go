package confine

import (
	"errors"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// restrictFiles limits what the process (every thread) may open, make, remove or rename to the folders in rw:
// the store. What it holds open already (/dev/fuse, the store's descriptors, its sockets) stays usable. TCP
// binds and connects are refused, and (ABI 6) abstract unix sockets and signals outside the process. It returns
// the kernel's Landlock ABI (0: none); with strict, a kernel without Landlock is an error.
func restrictFiles(strict bool, rw ...string) (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		if strict {
			return 0, errors.New("the kernel has no Landlock (it needs Linux 5.13 and landlock in the lsm= boot list): --confine strict refuses to serve unconfined")
		}
		return 0, nil
	}
	// Best effort: each right the kernel knows is handled, the newer ones are left to newer kernels.
	if err := landlock.V7.BestEffort().Restrict(landlock.RWDirs(rw...).WithRefer()); err != nil {
		return abi, fmt.Errorf("landlock: %w", err)
	}
	return abi, nil
}

// ABI is the kernel's Landlock ABI version (0: none).
func ABI() int {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return abi
}

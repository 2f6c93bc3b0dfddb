//go:build !amd64

package e2e

import (
	"errors"
	"syscall"
)

// canInject: injectIoctl works on this architecture (it sets x86-64's registers).
const canInject = false

func injectIoctl(pid, fd int, req uint64, arg []byte) (syscall.Errno, error) {
	return 0, errors.New("injecting a call needs x86-64")
}

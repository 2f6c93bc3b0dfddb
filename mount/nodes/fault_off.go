//go:build !faultinject

package nodes

import "syscall"

// fault is the fault-injection hook (fault_on.go); outside the test build it is nothing.
func fault(string, func(string)) (syscall.Errno, bool) { return 0, false }

// hostileLink is the fault-injection build's hostile answer for a session (fault_on.go); nothing outside it.
func hostileLink(string, func(string)) (string, bool) { return "", false }

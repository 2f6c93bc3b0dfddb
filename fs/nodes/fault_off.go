//go:build !faultinject

package nodes

import "syscall"

// fault is the fault-injection hook (fault_on.go); outside the test build it is nothing.
func fault(string) (syscall.Errno, bool) { return 0, false }

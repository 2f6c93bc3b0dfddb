//go:build !faultinject

package mount

// takeoverFault is nothing but in the fault-injection build (run_takeover_fault_on.go).
func takeoverFault() {}

//go:build !faultinject

package mount

// takeoverFault is nothing but in the fault-injection build (takeover_fault_on.go).
func takeoverFault() {}

// madeFault is nothing but in the fault-injection build.
func madeFault(string) {}

//go:build !faultinject

package takeover

// madeFault is nothing but in the fault-injection build.
func madeFault(string) {}

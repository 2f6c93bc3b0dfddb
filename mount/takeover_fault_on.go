//go:build faultinject

package mount

import (
	"os"
	"strings"
	"time"
)

// takeoverFault makes a daemon taking a connection over, on request, fail as one can: SESSIONFS_FAULT_TAKEOVER=stall
// never serves (it waits for good, as a daemon stopped or stuck would), exit dies before it serves. Only the test
// build (-tags faultinject) has it.
func takeoverFault() {
	switch os.Getenv("SESSIONFS_FAULT_TAKEOVER") {
	case "stall":
		for {
			time.Sleep(time.Hour)
		}
	case "exit":
		os.Exit(3)
	}
}

// madeFault makes a daemon die, on request, once it made a change to an entry named .sessionfs-die-after-<any>,
// before it answers: the kernel resends the request to the daemon that takes over (resend.go).
func madeFault(name string) {
	if strings.HasPrefix(name, ".sessionfs-die-after-") {
		os.Exit(3)
	}
}

//go:build faultinject

package mount

import (
	"os"
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

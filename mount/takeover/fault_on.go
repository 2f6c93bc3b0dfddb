//go:build faultinject

package takeover

import (
	"os"
	"strings"
)

// madeFault makes a daemon die, on request, once it made a change to an entry named .sessionfs-die-after-<any>,
// before it answers: the kernel resends the request to the daemon that takes over (resend.go).
func madeFault(name string) {
	if strings.HasPrefix(name, ".sessionfs-die-after-") {
		os.Exit(3)
	}
}

//go:build faultinject

package nodelog

import (
	"os"
	"strconv"
)

// halfSize is the size of each half of the node log: in the fault-injection build, a test may make it
// small (SESSIONFS_FAULT_NODELOG_HALF, bytes, rounded down to a page) to churn many times the log's capacity.
func halfSize() int64 {
	n, err := strconv.ParseInt(os.Getenv("SESSIONFS_FAULT_NODELOG_HALF"), 10, 64)
	if err != nil || n < pageSize || n > maxHalf {
		return maxHalf
	}
	return n &^ (pageSize - 1)
}

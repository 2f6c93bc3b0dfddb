//go:build !faultinject

package mount

// nodeLogHalfSize is the size of each half of the node log.
func nodeLogHalfSize() int64 { return nodeLogHalf }

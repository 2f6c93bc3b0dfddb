//go:build !faultinject

package nodelog

// halfSize is the size of each half of the node log.
func halfSize() int64 { return maxHalf }

//go:build !linux

package memlog

// physicalMemory is unknown outside Linux: 0.
func physicalMemory() int64 { return 0 }

package memlog

import (
	"os"
	"strconv"
	"strings"
)

// DefaultTotalBytes is the total cap when Config.TotalBytes is 0: a quarter
// of the memory the process may use, the machine's physical memory or the
// cgroup's limit when lower (a container). Where neither can be read it is
// -1, no total cap.
func DefaultTotalBytes() int64 {
	m := physicalMemory()
	if c := cgroupLimit(); c > 0 && (m <= 0 || c < m) {
		m = c
	}
	if m <= 0 {
		return -1
	}
	return m / 4
}

// cgroupLimit reads the memory limit of the process's cgroup (v2, then v1),
// or returns 0 when there is none.
func cgroupLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// "max" (v2) and a huge page-rounded number (v1) mean no limit.
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && n < 1<<60 {
			return n
		}
	}
	return 0
}

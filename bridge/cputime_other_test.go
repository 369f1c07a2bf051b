//go:build !unix

package bridge_test

import "time"

// processCPU cannot read the CPU time here.
func processCPU() (time.Duration, bool) { return 0, false }

//go:build !unix

package testtools

import "time"

// SelfCPU cannot read the CPU time on this system: it returns false.
func SelfCPU() (time.Duration, bool) { return 0, false }

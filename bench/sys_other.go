//go:build !linux

package bench

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalProfile is a no-op without SIGUSR1/SIGUSR2: profiles then stay
// empty.
func signalProfile(p *os.Process, start bool) {}

func isTmpfs(dir string) bool { return false }

func openFileLimit() int { return 0 }

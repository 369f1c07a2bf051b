package bench

import (
	"os"
	"syscall"
)

// sysProcAttr has the kernel kill a server process if the harness dies
// first, so an interrupted run leaves nothing behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// signalProfile asks bench/cmd/kgateway to start (SIGUSR1) or stop
// (SIGUSR2) a CPU profile.
func signalProfile(p *os.Process, start bool) {
	sig := syscall.SIGUSR2
	if start {
		sig = syscall.SIGUSR1
	}
	_ = p.Signal(sig)
}

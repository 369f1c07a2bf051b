package bench

import "syscall"

// sysProcAttr has the kernel kill a server process if the harness dies
// first, so an interrupted run leaves nothing behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

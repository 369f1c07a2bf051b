package kafkatest

import "syscall"

// sysProcAttr has the kernel kill the JVM if the process that started it
// dies first, so a crashed or killed test run does not leave a broker behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

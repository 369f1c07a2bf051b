package bench

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr has the kernel kill a server process if the harness dies
// first, so an interrupted run leaves nothing behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// signalProfile asks a gateway run with --profile-on-signal to start (SIGUSR1) or stop
// (SIGUSR2) a CPU profile.
func signalProfile(p *os.Process, start bool) {
	sig := syscall.SIGUSR2
	if start {
		sig = syscall.SIGUSR1
	}
	_ = p.Signal(sig)
}

// isTmpfs reports whether dir is on a tmpfs (in RAM).
func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// openFileLimit is this process's RLIMIT_NOFILE soft limit (the Go runtime
// has already raised it to the hard limit), 0 if unknown.
func openFileLimit() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

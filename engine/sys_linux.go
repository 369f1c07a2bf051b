//go:build linux

package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// writev writes iov with one writev(2) on a non-blocking fd. It exists
// because unix.Writev builds a fresh []Iovec per call; the loop keeps its
// own. This is the only use of package unsafe in engine.
func writev(fd int, iov []unix.Iovec) (int, unix.Errno) {
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(iov))), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

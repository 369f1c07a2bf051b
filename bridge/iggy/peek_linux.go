package iggy

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// peekFD is the syscall.RawConn callback of peerClosed: one non-blocking
// recvfrom(2) of a byte with MSG_PEEK (it stays queued), its outcome left in
// s.peek. It returns true: RawConn.Read must not wait for readability. The
// system call is made directly, with no source address asked for, so that
// a peek allocates nothing (unix.Recvfrom's address buffer escapes).
func (s *session) peekFD(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&s.peekBuf[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == unix.EAGAIN, errno == unix.EINTR:
		s.peek = peekEmpty // alive, nothing queued (or, interrupted, nothing known)
	case errno != 0:
		s.peek = peekFailed
	case n == 0:
		s.peek = peekEOF
	default:
		s.peek = peekData
	}
	return true
}

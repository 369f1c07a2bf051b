package iggy

import "golang.org/x/sys/unix"

// peekScratch is what a peek hands the kernel: the poll entry and a zero
// timeout, kept in the session so that a peek allocates nothing.
type peekScratch struct {
	fds  [1]unix.PollFd
	zero unix.Timespec
}

// peekFD is the syscall.RawConn callback of peerClosed: one ppoll(2) of the
// socket with a zero timeout, for POLLIN and POLLRDHUP, its outcome left in
// s.peek. POLLRDHUP tells a peer that closed its side even behind bytes
// still queued (under TLS, a session ticket nobody read yet); nothing is
// read. It returns true: RawConn.Read must not wait for readability.
func (s *session) peekFD(fd uintptr) bool {
	p := &s.peekScratch
	p.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}
	n, err := unix.Ppoll(p.fds[:], &p.zero, nil)
	revents := p.fds[0].Revents
	switch {
	case err == unix.EINTR, err == nil && n == 0:
		s.peek = peekEmpty // nothing to report (or, interrupted, nothing known)
	case err != nil, revents&(unix.POLLERR|unix.POLLNVAL) != 0:
		s.peek = peekFailed
	case revents&(unix.POLLRDHUP|unix.POLLHUP) != 0:
		s.peek = peekEOF
	case revents&unix.POLLIN != 0:
		s.peek = peekData
	default:
		s.peek = peekEmpty
	}
	return true
}

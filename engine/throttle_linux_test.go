//go:build linux

package engine

// mutedLeft returns how many connections the epoll server's loops still
// hold as throttled, or -1 for another engine. Call it after Shutdown: the
// loops have exited, and their connections are closed.
func mutedLeft(srv Server) int {
	s, ok := srv.(*epollServer)
	if !ok {
		return -1
	}
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	n := 0
	for _, l := range loops {
		n += len(l.muted)
	}
	return n
}

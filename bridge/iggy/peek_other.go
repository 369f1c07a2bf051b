//go:build !linux

package iggy

// peekScratch holds nothing off Linux.
type peekScratch struct{}

// peekFD stands in for Linux's peek: it finds nothing, so an idle
// connection is taken as alive, and a stale one fails its next request (a
// read is then sent again: stale.go).
func (s *session) peekFD(uintptr) bool {
	s.peek = peekEmpty
	return true
}

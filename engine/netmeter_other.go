//go:build !linux

package engine

import "net"

// rawConn is empty where the net engine does not meter its I/O.
type rawConn struct{}

// newMeteredConn returns nil: the net engine reads and writes nc itself,
// and charges a connection its dispatches only.
func newMeteredConn(net.Conn) *meteredConn { return nil }

// writeBuffers is never called where newMeteredConn returns nil.
func (m *meteredConn) writeBuffers(bufs [][]byte) (int64, error) {
	b := net.Buffers(bufs)
	return b.WriteTo(m.TCPConn)
}

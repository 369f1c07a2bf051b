//go:build linux

package engine

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// rawConn is the system-call access a meteredConn does its I/O through,
// and the state of the call in progress in each direction: the RawConn
// callbacks are method values made once, so a read or a write allocates
// nothing. The r fields are the reader's, the w fields the writer's (a TLS
// read that must answer a key update writes under tls.Conn's own lock).
type rawConn struct {
	raw syscall.RawConn

	readFn func(uintptr) bool
	rp     []byte
	rn     int
	rerr   error
	rbusy  time.Duration

	writeFn, writevFn func(uintptr) bool
	wp                []byte
	wbufs             [][]byte
	iov               []unix.Iovec
	wdone             int64
	werr              error
	wbusy             time.Duration
}

// newMeteredConn wraps nc when it is a TCP connection, nil otherwise (the
// net engine then reads and writes nc itself, unmetered).
func newMeteredConn(nc net.Conn) *meteredConn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	m := &meteredConn{TCPConn: tc}
	m.raw = raw
	m.readFn, m.writeFn, m.writevFn = m.readSome, m.writeAll, m.writevAll
	return m
}

// Read implements net.Conn with read(2) through the RawConn. A deadline
// or a close ends it with the RawConn's error (a net.Error whose Timeout
// says which), as net.TCPConn's Read does.
func (m *meteredConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	m.rp, m.rn, m.rerr, m.rbusy = p, 0, nil, 0
	start := time.Now()
	err := m.raw.Read(m.readFn)
	m.readParked.Add(int64(time.Since(start) - m.rbusy))
	n, errno := m.rn, m.rerr
	m.rp, m.rerr = nil, nil
	switch {
	case err != nil:
		return 0, err
	case errno != nil:
		return 0, m.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readSome is Read's RawConn callback: false (wait) on EAGAIN.
func (m *meteredConn) readSome(fd uintptr) bool {
	t := time.Now()
	for {
		m.rn, m.rerr = unix.Read(int(fd), m.rp)
		if m.rerr != unix.EINTR {
			break
		}
	}
	m.rbusy += time.Since(t)
	return m.rerr != unix.EAGAIN
}

// Write implements net.Conn with write(2) through the RawConn: all of p,
// or an error.
func (m *meteredConn) Write(p []byte) (int, error) {
	m.wp = p
	err := m.write(m.writeFn)
	m.wp = nil
	return int(m.wdone), err
}

// writeBuffers writes every byte of bufs with writev(2) through the
// RawConn, as net.Buffers.WriteTo does for a net.TCPConn.
func (m *meteredConn) writeBuffers(bufs [][]byte) (int64, error) {
	m.wbufs = bufs
	m.iov = appendIovecs(m.iov[:0], bufs, 0)
	err := m.write(m.writevFn)
	clear(m.iov[:cap(m.iov)]) // no response stays reachable from the scratch
	m.wbufs = nil
	return m.wdone, err
}

// write runs a write callback through the RawConn and keeps its waits.
func (m *meteredConn) write(fn func(uintptr) bool) error {
	m.wdone, m.werr, m.wbusy = 0, nil, 0
	start := time.Now()
	err := m.raw.Write(fn)
	m.writeParked.Add(int64(time.Since(start) - m.wbusy))
	errno := m.werr
	m.werr = nil
	switch {
	case err != nil:
		return err
	case errno != nil:
		return m.opError("write", errno)
	}
	return nil
}

// writeAll is Write's RawConn callback: false (wait) when the socket
// buffer is full.
func (m *meteredConn) writeAll(fd uintptr) bool {
	t := time.Now()
	defer m.addWriteBusy(t)
	for m.wdone < int64(len(m.wp)) {
		n, e := unix.Write(int(fd), m.wp[m.wdone:])
		if end, done := m.wrote(n, e); end {
			return done
		}
	}
	return true
}

// writevAll is writeBuffers' RawConn callback.
func (m *meteredConn) writevAll(fd uintptr) bool {
	t := time.Now()
	defer m.addWriteBusy(t)
	for len(m.iov) > 0 {
		n, e := writev(int(fd), m.iov)
		var err error
		if e != 0 {
			err = e
		}
		if end, done := m.wrote(n, err); end {
			return done
		}
		if err == nil {
			// Short when the socket buffer filled: what is left.
			m.iov = appendIovecs(m.iov[:0], m.wbufs, m.wdone)
		}
	}
	return true
}

// wrote takes one write's result: written bytes count, EINTR writes
// again, EAGAIN ends the callback to wait until the socket is writable
// (done false), another error ends the write (done true).
func (m *meteredConn) wrote(n int, err error) (end, done bool) {
	switch err {
	case nil:
		m.wdone += int64(n)
		return false, false
	case unix.EINTR:
		return false, false
	case unix.EAGAIN:
		return true, false
	}
	m.werr = err
	return true, true
}

func (m *meteredConn) addWriteBusy(t time.Time) { m.wbusy += time.Since(t) }

// appendIovecs appends iovecs of bufs past their first skip bytes to iov.
func appendIovecs(iov []unix.Iovec, bufs [][]byte, skip int64) []unix.Iovec {
	for _, b := range bufs {
		if skip >= int64(len(b)) {
			skip -= int64(len(b))
			continue
		}
		b = b[skip:]
		skip = 0
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		iov = append(iov, v)
	}
	return iov
}

// opError wraps a system call's error as net.TCPConn's methods do.
func (m *meteredConn) opError(op string, errno error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: m.LocalAddr(), Addr: m.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

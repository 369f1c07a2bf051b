package engine

// Design note: what the net engine charges for its reads and writes.
//
// A Read or Write on a net.Conn parks its goroutine in the Go runtime
// while the socket is not ready, so the wall time of the call would charge
// a connection for the time its peer was quiet. On Linux the net engine
// does a TCP connection's system calls itself, through syscall.RawConn
// (netmeter_linux.go): the runtime calls back when it finds (or hopes) the
// socket ready, and the time spent outside the callbacks, parked or
// waiting for a CPU after the wake-up, is added up per direction. The
// reader and the writer charge each call's wall time less the parked time
// it added (ioCharge): for plain TCP the system calls themselves, for TLS
// the system calls and the records' crypto, which tls.Conn does around
// them. The handshake is charged the same way. That is what the epoll
// engine charges for its non-blocking reads and writes, and what Kafka's
// request quota counts of its network threads (docs/design/quotas.md §3).
// Elsewhere (no RawConn metering) a connection is charged its dispatches
// only.

import (
	"net"
	"sync/atomic"
	"time"
)

// meteredConn is a TCP connection whose reads and writes keep count of the
// time they spent parked (netmeter_linux.go). Deadlines, addresses and
// Close are the embedded connection's.
type meteredConn struct {
	*net.TCPConn
	rawConn

	// Nanoseconds the reads (writes) spent outside their system calls.
	readParked  atomic.Int64
	writeParked atomic.Int64
}

// ioCharge adds to info's engine time what an I/O call that started at t0
// cost beyond waiting: its wall time less the nanoseconds it spent parked.
func ioCharge(info *ConnInfo, t0 time.Time, parked int64) {
	if d := int64(time.Since(t0)) - parked; d > 0 {
		info.engineNanos.Add(d)
	}
}

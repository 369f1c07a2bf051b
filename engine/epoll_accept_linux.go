//go:build linux

// The epoll engine's acceptor: one per Serve call, parked in the runtime
// poller on a dup of the listener's socket, handing each accepted socket to
// the loop with the fewest connections.

package engine

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// acceptor accepts connections for one Serve call on a dup of the
// listener's socket wrapped in an os.File: the runtime's poller parks the
// goroutine until the socket is readable, so no thread is blocked waiting
// for connections.
type acceptor struct {
	s        *epollServer
	ln       net.Listener
	lf       *os.File
	raw      syscall.RawConn
	acceptFn func(fd uintptr) bool
	err      error
	name     string // the listener's name (ConnInfo.Listener)
	// authTimeout is the listener's AuthTimeout.
	authTimeout time.Duration
	// maxFrameBeforeAuth is the listener's MaxFrameBeforeAuth.
	maxFrameBeforeAuth int32
	// quit is closed by stop: it ends a wait for the connection rate.
	quit     chan struct{}
	quitOnce sync.Once
}

// stop makes run return: closing the dup wakes the parked Read, and closing
// both descriptors makes the kernel refuse new connections.
func (a *acceptor) stop() {
	a.quitOnce.Do(func() { close(a.quit) })
	a.ln.Close()
	a.lf.Close()
}

// wait waits d for MaxConnectionCreationRate; false means stop came first.
func (a *acceptor) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.quit:
		return false
	}
}

// run accepts until the listener closes. It returns the error that stopped
// it (nil after stop).
func (a *acceptor) run() error {
	for {
		err := a.raw.Read(a.acceptFn)
		if a.err != nil {
			return a.err
		}
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// acceptAll accepts every pending connection; false means "wait until the
// listener is readable again", true ends the Read with a.err set.
func (a *acceptor) acceptAll(lfd uintptr) bool {
	s := a.s
	for {
		fd, sa, err := unix.Accept4(int(lfd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return false
		case unix.EINTR, unix.ECONNABORTED, unix.EPERM, unix.EPROTO:
			continue
		case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
			// Out of descriptors or memory: back off and retry; the
			// backlog holds the peers meanwhile.
			s.cfg.Logger.Warn("engine: accept failed; backing off", "err", err)
			time.Sleep(10 * time.Millisecond)
			return true
		default:
			a.err = err
			return true
		}
		ip := sockaddrIP(sa)
		now := time.Now()
		if d := s.rates.ipThrottle(ip, now); d > 0 {
			s.rates.hold(d, func() { unix.Close(fd) }, &s.acc)
			continue
		}
		if d := s.rates.acceptDelay(now); d > 0 && !a.wait(d) {
			unix.Close(fd)
			return false // stopped: the next Read fails on the closed listener
		}
		if !admitConn(&s.open, &s.acc, s.cfg.MaxConnections) || !admitIP(&s.ips, ip, &s.open, &s.acc) {
			unix.Close(fd)
			continue
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		info := &ConnInfo{ID: s.nextID.Add(1), RemoteAddr: sockaddrString(sa), Listener: a.name}
		info.setIP(&s.ips, ip)
		info.startAuthClock(a.authTimeout)
		if lsa, err := unix.Getsockname(fd); err == nil {
			info.LocalAddr = sockaddrString(lsa)
		}
		l := s.pickLoop()
		c := &econn{fd: fd, info: info, l: l, inflight: inflight{slots: newSlots(s.cfg.MaxInFlight)}}
		c.fr.max = s.cfg.MaxFrameSize
		c.fr.limitBeforeAuth(a.maxFrameBeforeAuth, info)
		l.n.open.Add(1) // counted now so pickLoop spreads a burst
		l.command(cmd{kind: cmdAdd, c: c})
	}
}

// sockaddrIP returns the IP address of sa (unmapped), invalid for a Unix
// socket.
func sockaddrIP(sa unix.Sockaddr) netip.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr).Unmap()
	}
	return netip.Addr{}
}

func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrUnix:
		return a.Name
	}
	return ""
}

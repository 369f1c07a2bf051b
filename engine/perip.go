package engine

import (
	"net"
	"net/netip"
	"sync"
)

// ipCounts counts the open connections of each client IP address for
// Config.MaxConnectionsPerIP (Kafka's max.connections.per.ip). Its map
// holds only addresses with a connection open, so it is bounded by the
// open connections.
type ipCounts struct {
	max int // 0 = no cap: nothing is counted
	mu  sync.Mutex
	m   map[netip.Addr]int
}

// admit counts one more connection of ip; false means ip already has max
// open and nothing was counted. An invalid address (a Unix socket) is not
// counted.
func (p *ipCounts) admit(ip netip.Addr) bool {
	if p.max <= 0 || !ip.IsValid() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[netip.Addr]int)
	}
	if p.m[ip] >= p.max {
		return false
	}
	p.m[ip]++
	return true
}

// release uncounts a connection admit counted.
func (p *ipCounts) release(ip netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := p.m[ip]; n > 1 {
		p.m[ip] = n - 1
	} else {
		delete(p.m, ip)
	}
}

// admitIP applies the per-IP cap to a connection admitConn admitted; false
// means it was refused (counted as such, and no longer open) and the caller
// must close it. On true, info must carry ip and ips (setIP) so that its
// close releases the count.
func admitIP(ips *ipCounts, ip netip.Addr, open interface{ Add(int64) int64 }, n *counters) bool {
	if ips.admit(ip) {
		return true
	}
	n.refused.Add(1)
	n.closes[ReasonMaxConnectionsPerIP].Add(1)
	open.Add(-1)
	return false
}

// setIP records that the connection is counted in ips under ip.
func (c *ConnInfo) setIP(ips *ipCounts, ip netip.Addr) {
	if ips.max > 0 && ip.IsValid() {
		c.ips, c.ip = ips, ip
	}
}

// releaseIP uncounts the connection's IP, once.
func (c *ConnInfo) releaseIP() {
	if c.ips != nil {
		c.ips.release(c.ip)
		c.ips = nil
	}
}

// addrIP returns the IP address of a net.Addr, unmapped from IPv6; invalid
// when there is none.
func addrIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

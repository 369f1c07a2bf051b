package bridge

import (
	"net"
	"strconv"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security"
)

// AdvertisedAddr is the address clients of one listener are told to
// connect to (Config.AdvertisedListeners).
type AdvertisedAddr struct {
	// Host is the advertised host; "" = the address the client reached.
	Host string
	// Port is the advertised port; 0 = the port the client reached.
	Port int32
}

// newConnState is the state of a connection at its first request. On an SSL
// listener it starts as the principal of its client certificate (Kafka's
// SslPrincipalMapper; docs/design/security.md §5); SASL_SSL connections
// take theirs from SASL instead, as in Kafka.
func (g *Gateway) newConnState(ci *engine.ConnInfo) *connState {
	cs := &connState{conn: ci}
	if ci.TLS != nil && g.cfg.CertPrincipal != nil && g.protocolOf(ci) == security.SSL {
		p := g.cfg.CertPrincipal(ci.TLS)
		if p != security.Anonymous {
			cs.setPrincipal(p)
		}
		g.cfg.Logger.Debug("tls: connection principal", "conn", ci.ID, "listener", ci.Listener, "principal", cs.principal().String())
	}
	return cs
}

// advertisedAddr returns the host and port clients should dial: those of the
// listener the connection came in on (AdvertisedListeners), else the
// configured ones, else the address this connection reached.
func (g *Gateway) advertisedAddr(c *call) (string, int32) {
	host, port := g.cfg.AdvertisedHost, g.cfg.AdvertisedPort
	if a, ok := g.cfg.AdvertisedListeners[c.req.Conn().Listener]; ok {
		host, port = a.Host, a.Port
	}
	if host != "" && port != 0 {
		return host, port
	}
	h, p, err := net.SplitHostPort(c.req.Conn().LocalAddr)
	if err == nil {
		if host == "" {
			host = h
		}
		if port == 0 {
			n, _ := strconv.Atoi(p)
			port = int32(n)
		}
	}
	return host, port
}

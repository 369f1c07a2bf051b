package bridge

import (
	"github.com/kiggy-io/kiggy/engine"
	"sync/atomic"

	"github.com/kiggy-io/kiggy/security"
)

// connAuth is who a connection acts as. The listener sets it from a client
// certificate; SASL sets it after a successful authentication; the
// authorizer reads it on every request (docs/design/security.md).
type connAuth struct {
	principal atomic.Pointer[security.Principal]
	// describe is the connection's last DESCRIBE filter (acl.go
	// describeFilter), kept while its principal is the same.
	describe atomic.Pointer[describeFilter]
}

// principal returns the connection's principal: security.Anonymous until a
// listener or SASL set another.
func (cs *connState) principal() security.Principal {
	if p := cs.auth.principal.Load(); p != nil {
		return *p
	}
	return security.Anonymous
}

// setPrincipal records who the connection acts as from now on.
func (cs *connState) setPrincipal(p security.Principal) {
	cs.auth.principal.Store(&p)
}

// protocolOf returns the security protocol of the listener ci came in on
// (Config.Listeners; PLAINTEXT when it is not listed).
func (g *Gateway) protocolOf(ci *engine.ConnInfo) security.Protocol {
	return g.cfg.Listeners[ci.Listener]
}

// SaslHandshake (API key 17): versions 0–1 (wire.APIs), never flexible.
//
// As Kafka's SaslServerAuthenticator (docs/design/security.md §7); after v0
// the tokens arrive as bare frames, served by serveSASLToken (sasl.go).

package bridge

import (
	"strings"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeySaslHandshake, (*Gateway).saslHandshake) }

// saslHandshake answers SaslHandshake (key 17): the mechanism is chosen,
// or UNSUPPORTED_SASL_MECHANISM with the enabled ones (and the connection
// closes at its next request, as Kafka closes it after the response).
func (g *Gateway) saslHandshake(c *call) bool {
	var req wire.SaslHandshakeRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := &wire.SaslHandshakeResponse{Mechanisms: g.sasl.server.Mechanisms()}
	s := &c.cs.sasl
	switch {
	case !g.protocolOf(c.cs.conn).SASL(), s.stage == saslAuthenticate,
		s.authenticated && g.cfg.SASL.MaxReauth <= 0:
		// KafkaApis.handleSaslHandshakeRequest: a SaslHandshake that reaches
		// the request handler (a PLAINTEXT listener, or an authenticated
		// connection that may not re-authenticate) is ILLEGAL_SASL_STATE.
		resp.ErrorCode = wire.IllegalSaslState
	case s.authenticated && req.Mechanism != s.mech:
		// KIP-368: re-authentication must use the session's mechanism.
		resp.ErrorCode = wire.UnsupportedSaslMechanism
		s.stage = saslFailed
	default:
		sess, ok := g.sasl.server.Start(req.Mechanism)
		if !ok {
			resp.ErrorCode = wire.UnsupportedSaslMechanism
			s.stage = saslFailed
			break
		}
		// The mechanism is kept past the frame, which it aliases.
		s.sess, s.mech, s.stage = sess, strings.Clone(req.Mechanism), saslAuthenticate
		s.raw = c.hdr.APIVersion == 0
	}
	resp.CountErrors(g.errorCounter(c))
	if s.stage == saslFailed {
		// An unusable mechanism: Kafka answers, then closes the connection
		// (SaslServerAuthenticator.handleHandshakeRequest), both after
		// connection.failed.authentication.delay.ms.
		g.saslFailClose(c.req, resp.AppendTo(c.responseBuffer(), c.hdr.APIVersion), engine.ReasonAuthentication, "")
		return false
	}
	respond(c, resp)
	return false
}

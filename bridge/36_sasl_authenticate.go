// SaslAuthenticate (API key 36): versions 0–2 (wire.APIs); v1 adds the
// session lifetime (KIP-368).
//
// As Kafka's SaslServerAuthenticator (docs/design/security.md §7); the same
// handler serves the bare tokens that follow SaslHandshake v0.

package bridge

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeySaslAuthenticate, (*Gateway).saslAuthenticate) }

// saslAuthenticate answers SaslAuthenticate (key 36), or a bare token after
// SaslHandshake v0 (c.hdr.APIVersion == saslRawVersion).
func (g *Gateway) saslAuthenticate(c *call) bool {
	s := &c.cs.sasl
	raw := c.hdr.APIVersion == saslRawVersion
	var req wire.SaslAuthenticateRequest
	if raw {
		req.AuthBytes = c.body
	} else if !decodeOrClose(c, &req) {
		return false
	}
	if !g.protocolOf(c.cs.conn).SASL() || s.stage != saslAuthenticate || s.sess == nil {
		// KafkaApis.handleSaslAuthenticateRequest: ILLEGAL_SASL_STATE.
		resp := &wire.SaslAuthenticateResponse{ErrorCode: wire.IllegalSaslState,
			ErrorMessage: wire.NullStringOf("SaslAuthenticate request received after successful authentication")}
		resp.CountErrors(g.errorCounter(c))
		respond(c, resp)
		return false
	}
	if c.inline {
		// Verifying may hash (PBKDF2) or read the system store.
		return g.offload(c)
	}
	reply, done, err := g.saslStep(s, req.AuthBytes)
	resp := &wire.SaslAuthenticateResponse{AuthBytes: reply}
	switch {
	case err != nil:
		g.saslFail(c, s, err)
		if raw {
			// SaslHandshake v0: Kafka closes without a response.
			g.saslFailClose(c.req, nil, engine.ReasonProtocolError, "SASL authentication failed")
			return false
		}
		resp.ErrorCode = wire.SaslAuthenticationFailed
		resp.ErrorMessage = wire.NullStringOf(saslFailMessage(s.mech, err))
		resp.AuthBytes = nil
	case done:
		if !g.saslAuthenticated(c, s, resp) {
			return false
		}
	}
	if raw {
		c.req.Respond(append(c.req.ResponseBuffer(), reply...))
		return false
	}
	resp.CountErrors(g.errorCounter(c))
	if err != nil {
		// Kafka's SaslServerAuthenticator answers the failure, then closes
		// the connection, both after connection.failed.authentication.delay.ms
		// (docs/design/security.md §7).
		g.saslFailClose(c.req, resp.AppendTo(c.responseBuffer(), c.hdr.APIVersion), engine.ReasonAuthentication, "")
		return false
	}
	respond(c, resp)
	return false
}

// saslStep runs one step of the connection's mechanism on token, under the
// gateway's verification semaphore, within 10 s.
func (g *Gateway) saslStep(s *saslConn, token []byte) (reply []byte, done bool, err error) {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	select {
	case g.sasl.verify <- struct{}{}:
		reply, done, err = s.sess.Step(ctx, token)
		<-g.sasl.verify
	case <-ctx.Done():
		err = ctx.Err()
	}
	return reply, done, err
}

// saslAuthenticated completes a successful authentication: the
// connection's principal (which a re-authentication may not change,
// KIP-368), the metrics, and the session's lifetime in resp. It reports
// false when it closed the connection instead.
func (g *Gateway) saslAuthenticated(c *call, s *saslConn, resp *wire.SaslAuthenticateResponse) bool {
	user := s.sess.User()
	if s.authenticated && security.User(user) != c.cs.principal() {
		// KIP-368: "Cannot change principals during re-authentication".
		g.saslFail(c, s, errors.New("principal changed during re-authentication"))
		g.saslFailClose(c.req, nil, engine.ReasonProtocolError, "principal changed during re-authentication")
		return false
	}
	if s.authenticated {
		g.sasl.metrics.reauth.Add(1)
	}
	if mi := saslMechIndex(s.mech); mi >= 0 {
		g.sasl.metrics.success[mi].Add(1)
	}
	lifetime := g.saslLifetime(s.sess.Expiry())
	s.authenticated, s.user, s.stage, s.sess, s.raw = true, user, saslInitial, nil, false
	s.expires = time.Time{}
	if lifetime > 0 {
		s.expires = time.Now().Add(lifetime)
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
	}
	c.cs.setPrincipal(security.User(user))
	c.cs.conn.Authenticated() // the listener's AuthTimeout is met
	return true
}

// saslLifetime is a new session's lifetime: connections.max.reauth.ms,
// shortened to the credential's expiry (KIP-368: "the session lifetime is
// the smaller of the two"); 0 when re-authentication is off.
func (g *Gateway) saslLifetime(expiry time.Time) time.Duration {
	limit := g.cfg.SASL.MaxReauth
	if limit <= 0 {
		return 0
	}
	if !expiry.IsZero() {
		if d := time.Until(expiry); d < limit {
			return max(d, time.Millisecond)
		}
	}
	return limit
}

// saslFail records a failed authentication: counted, logged once per
// connection (never the secret), and every later request closes.
func (g *Gateway) saslFail(c *call, s *saslConn, err error) {
	if mi := saslMechIndex(s.mech); mi >= 0 {
		g.sasl.metrics.failure[mi].Add(1)
	}
	if !s.logged {
		s.logged = true
		user := ""
		if s.sess != nil {
			user = s.sess.User()
		}
		g.cfg.Logger.Warn("sasl: authentication failed", "conn", c.cs.conn.ID, "remote", c.cs.conn.RemoteAddr,
			"mechanism", s.mech, "user", user, "err", err)
	}
	s.stage, s.sess = saslFailed, nil
}

// saslFailMessage is the ErrorMessage of a failed SaslAuthenticate, in
// Kafka's words.
func saslFailMessage(mech string, err error) string {
	switch {
	case mech == sasl.Plain:
		return "Authentication failed: Invalid username or password"
	case strings.HasPrefix(mech, "SCRAM-"):
		return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
	}
	return "Authentication failed: " + err.Error()
}

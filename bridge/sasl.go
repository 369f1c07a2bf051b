package bridge

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/metric"
	"github.com/kiggy-io/kiggy/security/sasl"
	"github.com/kiggy-io/kiggy/security/scram"
	"github.com/kiggy-io/kiggy/wire"
)

// SASL authentication on SASL listeners (docs/design/security.md §7).
//
// A connection on a SASL_PLAINTEXT or SASL_SSL listener goes through
// Kafka's SaslServerAuthenticator states before any other request is
// served: ApiVersions (optional, once), SaslHandshake (the mechanism), then
// SaslAuthenticate requests carrying the mechanism's messages until it
// succeeds. Any other request before that closes the connection ("Unexpected
// Kafka request of type X during SASL handshake"). The state lives in the
// connection's connState and is only touched by the connection's one
// request in progress: nothing runs, waits or is held between its requests.
//
// This file holds the gate, the bare tokens after SaslHandshake v0 and the
// SCRAM credential store; the SASL and SCRAM APIs are 17_sasl_handshake.go,
// 36_sasl_authenticate.go, 48_describe_client_quotas.go,
// 50_describe_user_scram_credentials.go and
// 51_alter_user_scram_credentials.go.

// DefaultSASLHandshakeTimeout bounds the time from a SASL connection's first
// request to a successful authentication.
const DefaultSASLHandshakeTimeout = 10 * time.Second

// DefaultSASLServerMaxReceiveSize is the default of Kafka's
// sasl.server.max.receive.size: the largest request frame a connection of a
// SASL listener may send before it authenticates (engine.Listener.MaxFrameBeforeAuth).
const DefaultSASLServerMaxReceiveSize = 512 << 10

// DefaultFailedAuthenticationDelay is the default of Kafka's
// connection.failed.authentication.delay.ms (KIP-306).
const DefaultFailedAuthenticationDelay = 100 * time.Millisecond

// SASLConfig configures authentication on SASL listeners. With no
// mechanism enabled a SASL listener authenticates nobody.
type SASLConfig struct {
	// Plain verifies PLAIN (RFC 4616) passwords; nil = PLAIN off.
	Plain sasl.PlainVerifier
	// Scram enables SCRAM-SHA-256 and SCRAM-SHA-512 against the
	// credentials in the system store (namespace "scram"), managed with
	// AlterUserScramCredentials.
	Scram bool
	// OAuth validates OAUTHBEARER tokens; nil = OAUTHBEARER off.
	OAuth *sasl.OAuthValidator
	// HandshakeTimeout bounds the time from a SASL connection's first
	// request to a successful authentication: a request arriving later on
	// a connection still unauthenticated closes it. 0 = 10 s. The engine
	// closes one that sends nothing, or stops half-way, when its listener
	// has an AuthTimeout (engine.Listener; cmd/kiggy sets it to the same
	// value).
	HandshakeTimeout time.Duration
	// ScramBootstrap adds SCRAM-SHA-256 and SCRAM-SHA-512 credentials
	// (4096 iterations) at start for each user (name → password) that has
	// none yet: the first users, before any connection can authenticate to
	// send AlterUserScramCredentials.
	ScramBootstrap map[string]string
	// MaxReauth is Kafka's connections.max.reauth.ms (KIP-368): a
	// session's lifetime, announced in SaslAuthenticate v1+; a connection
	// whose session ended without re-authenticating is closed on its next
	// request. 0 = sessions never end and re-authentication is refused.
	MaxReauth time.Duration
	// FailedAuthenticationDelay is Kafka's
	// connection.failed.authentication.delay.ms (KIP-306): the answer to a
	// failed authentication, and the close that follows it, wait this long,
	// and nothing more is read from the connection meanwhile, so that a
	// client guessing passwords, or misconfigured and reconnecting in a
	// loop, makes a few attempts a second per connection instead of
	// thousands. 0 = DefaultFailedAuthenticationDelay; negative = at once.
	FailedAuthenticationDelay time.Duration
}

// sasl stages of a connection, Kafka's SaslServerAuthenticator states.
const (
	saslInitial      uint8 = iota // ApiVersions or SaslHandshake next
	saslVersioned                 // ApiVersions seen: SaslHandshake next
	saslAuthenticate              // SaslAuthenticate next
	saslFailed                    // authentication failed: every request closes
)

// saslConn is a connection's authentication state.
type saslConn struct {
	// resolved and on: whether the connection's listener is SASL, looked
	// up at its first request.
	resolved, on bool
	stage        uint8
	// raw: SaslHandshake v0 was used, so the mechanism's messages come as
	// bare frames, not SaslAuthenticate requests.
	raw           bool
	authenticated bool
	sess          sasl.Session
	mech          string
	user          string
	// first is the connection's first request (handshake timeout).
	first time.Time
	// expires ends the session (KIP-368); zero = never.
	expires time.Time
	logged  bool
}

// saslRawVersion marks a call carrying a bare SASL token (SaslHandshake
// v0), dispatched to the SaslAuthenticate handler.
const saslRawVersion = -1

// saslMechIndex numbers the mechanisms for the metrics.
var saslMechNames = [...]string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512, sasl.OAuthBearer}

func saslMechIndex(m string) int {
	for i, n := range saslMechNames {
		if n == m {
			return i
		}
	}
	return -1
}

// saslCloseReasons label kiggy_sasl_connections_closed_total.
const (
	saslCloseUnexpected = iota
	saslCloseTimeout
	saslCloseExpired
	saslCloseFailed
	saslNumClose
)

var saslCloseNames = [saslNumClose]string{"unexpected_request", "handshake_timeout", "session_expired", "after_failure"}

// saslMetrics counts authentications.
type saslMetrics struct {
	success [len(saslMechNames)]atomic.Uint64
	failure [len(saslMechNames)]atomic.Uint64
	reauth  atomic.Uint64
	closed  [saslNumClose]atomic.Uint64
}

// saslState is the gateway's SASL side.
type saslState struct {
	server sasl.Server
	scram  *scramStore
	// verify bounds the exchanges verifying at once (PBKDF2 of a hashed
	// PLAIN password costs milliseconds of CPU): a flood of attempts waits
	// here instead of taking every core from authenticated traffic.
	verify chan struct{}
	// delayed counts the connections waiting out
	// FailedAuthenticationDelay (kiggy_sasl_failed_authentications_delayed).
	delayed atomic.Int64
	metrics saslMetrics
}

// initSASL builds the mechanisms from cfg.SASL.
func (g *Gateway) initSASL() {
	c := &g.cfg.SASL
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultSASLHandshakeTimeout
	}
	if c.FailedAuthenticationDelay == 0 {
		c.FailedAuthenticationDelay = DefaultFailedAuthenticationDelay
	}
	g.sasl.scram = &scramStore{sys: g.system, notice: g.noticeStateChange}
	g.sasl.verify = make(chan struct{}, max(1, gomaxprocs()/2))
	g.sasl.server = sasl.Server{Plain: c.Plain, OAuth: c.OAuth}
	if c.Scram {
		g.sasl.server.Scram = g.sasl.scram
	}
	if len(c.ScramBootstrap) > 0 {
		ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
		defer cancel()
		if err := g.BootstrapScram(ctx, c.ScramBootstrap); err != nil {
			g.cfg.Logger.Warn("sasl: bootstrap SCRAM users", "err", err)
		}
	}
}

// saslGate decides whether a parsed request of a connection may be served
// now. It closes req and reports false when not (Kafka closes the
// connection on any request out of the SaslServerAuthenticator's order).
func (g *Gateway) saslGate(cs *connState, req *engine.Request, hdr *wire.RequestHeader) bool {
	key := hdr.APIKey
	s := &cs.sasl
	if !s.resolved {
		// The listener's protocol, looked up once per connection.
		s.resolved, s.on = true, g.protocolOf(cs.conn).SASL()
	}
	if !s.on {
		return true
	}
	if s.stage == saslFailed {
		g.saslClose(req, saslCloseFailed, "request after a failed authentication")
		return false
	}
	if s.authenticated && s.expires.IsZero() {
		return true // no session lifetime: nothing to check, not even the clock
	}
	now := time.Now()
	if s.authenticated {
		if now.After(s.expires) && key != wire.KeySaslHandshake && key != wire.KeySaslAuthenticate {
			// KIP-368: "the server will close the connection if the
			// client sends a request after the session expired".
			g.saslClose(req, saslCloseExpired, "session expired without re-authentication")
			return false
		}
		if s.stage == saslAuthenticate && key != wire.KeySaslAuthenticate && now.After(s.expires) {
			g.saslClose(req, saslCloseExpired, "session expired during re-authentication")
			return false
		}
		return true
	}
	if s.first.IsZero() {
		s.first = now
	} else if now.Sub(s.first) > g.cfg.SASL.HandshakeTimeout {
		g.saslClose(req, saslCloseTimeout, "SASL handshake timeout")
		return false
	}
	ok := false
	switch s.stage {
	case saslInitial:
		ok = key == wire.KeyAPIVersions || key == wire.KeySaslHandshake
	case saslVersioned:
		ok = key == wire.KeySaslHandshake
	case saslAuthenticate:
		ok = key == wire.KeySaslAuthenticate
	}
	if !ok {
		detail := "Unexpected Kafka request of type " + key.String() + " during SASL handshake"
		if s.stage == saslAuthenticate {
			// After SaslHandshake, Kafka's authenticator fails the
			// authentication (IllegalSaslStateException), so the close is
			// delayed (KIP-306); before it, it closes at once. Kafka also
			// answers the request with its error response first; kiggy
			// closes without one.
			s.stage = saslFailed
			g.sasl.metrics.closed[saslCloseUnexpected].Add(1)
			g.saslFailClose(req, nil, engine.ReasonProtocolError, detail)
			return false
		}
		g.saslClose(req, saslCloseUnexpected, detail)
		return false
	}
	if key == wire.KeyAPIVersions && hdr.APIVersion <= g.apiMax {
		// SaslServerAuthenticator: an ApiVersions of a version it does not
		// know is answered UNSUPPORTED_VERSION in the same state, so that
		// the client can retry with ours (KIP-511).
		s.stage = saslVersioned
	}
	return true
}

func (g *Gateway) saslClose(req *engine.Request, why int, detail string) {
	g.sasl.metrics.closed[why].Add(1)
	req.Close(engine.ReasonProtocolError, detail)
}

// saslFailClose ends req's connection after a failed authentication: resp
// (nil = none) is written and the connection closed under reason, both
// FailedAuthenticationDelay from now. Meanwhile the connection is muted
// (engine.ConnInfo.Throttle) and a timer holds the request, which keeps
// its place in the response order. Kafka's Selector holds such a channel
// alike (connection.failed.authentication.delay.ms: "the time (in
// milliseconds) by which connection close will be delayed on authentication
// failure"), and sends the failure's answer with the close; its answer comes
// at the first poll of its network thread after the delay, up to 300 ms
// later, kiggy's when the delay ends.
func (g *Gateway) saslFailClose(req *engine.Request, resp []byte, reason engine.CloseReason, detail string) {
	end := func() {
		if resp == nil {
			req.Close(reason, detail)
		} else {
			req.RespondThenClose(resp, reason)
		}
	}
	d := g.cfg.SASL.FailedAuthenticationDelay
	if d <= 0 {
		end()
		return
	}
	req.Conn().Throttle(d)
	g.sasl.delayed.Add(1)
	time.AfterFunc(d, func() {
		g.sasl.delayed.Add(-1)
		end()
	})
}

// saslRawPending reports whether the connection's next frame is a bare SASL
// token (after SaslHandshake v0).
func (g *Gateway) saslRawPending(cs *connState) bool {
	return cs.sasl.raw && cs.sasl.stage == saslAuthenticate
}

// writeSASLMetrics writes the SASL counters (docs/METRICS.md).
func (g *Gateway) writeSASLMetrics(w io.Writer) {
	m := &g.sasl.metrics
	metric.Header(w, "kiggy_sasl_authentications_total", "counter", "SASL authentications, by mechanism and outcome (re-authentications included).")
	for i, n := range saslMechNames {
		fmt.Fprintf(w, "kiggy_sasl_authentications_total{mechanism=%q,outcome=\"success\"} %d\n", n, m.success[i].Load())
		fmt.Fprintf(w, "kiggy_sasl_authentications_total{mechanism=%q,outcome=\"failure\"} %d\n", n, m.failure[i].Load())
	}
	metric.Single(w, "kiggy_sasl_reauthentications_total", "counter", "Successful KIP-368 re-authentications.", m.reauth.Load())
	metric.Single(w, "kiggy_sasl_failed_authentications_delayed", "gauge", "Connections whose authentication failed, waiting out --connection-failed-authentication-delay before their answer and close.", g.sasl.delayed.Load())
	metric.Header(w, "kiggy_sasl_connections_closed_total", "counter", "Connections the SASL gate closed, by reason.")
	for i, n := range saslCloseNames {
		fmt.Fprintf(w, "kiggy_sasl_connections_closed_total{reason=%q} %d\n", n, m.closed[i].Load())
	}
}

// scramNamespace is the system store namespace of SCRAM credentials: key
// "<mechanism>/<user>", value scram.Credential.Encode
// (docs/design/security.md §8).
const scramNamespace = "scram"

// scramMissReread is how long after the last read of the credentials a
// lookup that finds none reads the store again: a user created through
// another gateway on the same store logs in here at once, without waiting
// for the shared state refresh (sharedstate.go), and a flood of unknown
// users costs at most one read per interval.
const scramMissReread = 250 * time.Millisecond

// scramStore is the SCRAM credentials over the system store, cached. The
// cache is read once and then kept current by this gateway's own changes
// and, where other gateways share the store, by the shared state refresh
// (reload) and a lookup's miss.
type scramStore struct {
	sys store.SystemStore
	// notice is called after each credential stored (sharedstate.go).
	notice func()
	mu     sync.Mutex
	cache  map[string]scram.Credential
	loaded time.Time
	// version is the store's SystemVersion at the last read (0 unknown).
	version uint64
}

func scramKey(m scram.Mechanism, user string) string { return m.Name() + "/" + user }

// load returns the credentials, read on first use. Callers hold s.mu.
func (s *scramStore) load(ctx context.Context) (map[string]scram.Credential, error) {
	if s.cache != nil {
		return s.cache, nil
	}
	return s.read(ctx)
}

// read reads the credentials from the store into the cache, unless the
// store reports them unchanged since the last read. Callers hold s.mu.
func (s *scramStore) read(ctx context.Context) (map[string]scram.Credential, error) {
	var version uint64
	if sv, ok := s.sys.(store.SystemVersions); ok {
		v, err := sv.SystemVersion(ctx, scramNamespace)
		if err != nil {
			return nil, err
		}
		if s.cache != nil && v == s.version {
			s.loaded = time.Now()
			return s.cache, nil
		}
		version = v
	}
	raw, err := s.sys.LoadSystem(ctx, scramNamespace)
	if err != nil {
		return nil, err
	}
	m := make(map[string]scram.Credential, len(raw))
	for k, v := range raw {
		if c, err := scram.Decode(v); err == nil {
			m[k] = c
		}
	}
	s.cache, s.loaded, s.version = m, time.Now(), version
	return m, nil
}

// reload reads the credentials again if the store changed (the shared
// state refresh).
func (s *scramStore) reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.read(ctx)
	return err
}

// ScramCredential implements sasl.ScramStore.
func (s *scramStore) ScramCredential(ctx context.Context, m scram.Mechanism, user string) (scram.Credential, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	creds, err := s.load(ctx)
	if err != nil {
		return scram.Credential{}, false, err
	}
	c, ok := creds[scramKey(m, user)]
	if !ok && time.Since(s.loaded) >= scramMissReread {
		if creds, err = s.read(ctx); err != nil {
			return scram.Credential{}, false, err
		}
		c, ok = creds[scramKey(m, user)]
	}
	return c, ok, nil
}

// put stores (or, with c nil, deletes) one credential.
func (s *scramStore) put(ctx context.Context, m scram.Mechanism, user string, c *scram.Credential) error {
	var v []byte
	if c != nil {
		v = c.Encode()
	}
	if err := s.sys.PutSystem(ctx, scramNamespace, scramKey(m, user), v); err != nil {
		return err
	}
	if s.notice != nil {
		s.notice()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != nil {
		if c != nil {
			s.cache[scramKey(m, user)] = *c
		} else {
			delete(s.cache, scramKey(m, user))
		}
	}
	return nil
}

// users returns every user with credentials and their mechanisms.
func (s *scramStore) users(ctx context.Context) (map[string][]wire.ScramCredentialInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	creds, err := s.read(ctx) // describe reads the store itself
	if err != nil {
		return nil, err
	}
	out := map[string][]wire.ScramCredentialInfo{}
	for k, c := range creds {
		mn, user, _ := strings.Cut(k, "/")
		m := scram.ParseMechanism(mn)
		if !m.Valid() {
			continue
		}
		out[user] = append(out[user], wire.ScramCredentialInfo{Mechanism: int8(m), Iterations: int32(c.Iterations)})
	}
	for _, infos := range out {
		slices.SortFunc(infos, func(a, b wire.ScramCredentialInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
	}
	return out, nil
}

// BootstrapScram adds a SCRAM-SHA-256 and a SCRAM-SHA-512 credential for
// every user of users (name → password) that has none yet (kafka-storage
// format --add-scram's role; cmd/kiggy's --sasl-scram-bootstrap-users-file).
func (g *Gateway) BootstrapScram(ctx context.Context, users map[string]string) error {
	for user, pass := range users {
		for _, m := range scram.Mechanisms {
			if _, ok, err := g.sasl.scram.ScramCredential(ctx, m, user); err != nil {
				return err
			} else if ok {
				continue
			}
			c := scram.FromPassword(m, pass, scram.MinIterations)
			if err := g.sasl.scram.put(ctx, m, user, &c); err != nil {
				return err
			}
		}
	}
	return nil
}

// serveSASLToken serves a bare SASL token frame (after SaslHandshake v0)
// through the SaslAuthenticate handler.
func (g *Gateway) serveSASLToken(cs *connState, req *engine.Request, seq uint64, inline bool) bool {
	if s := &cs.sasl; !s.authenticated && time.Since(s.first) > g.cfg.SASL.HandshakeTimeout {
		g.saslClose(req, saslCloseTimeout, "SASL handshake timeout")
		return false
	}
	st := g.states.Get().(*state)
	c := &st.call
	hdr := wire.RequestHeader{APIKey: wire.KeySaslAuthenticate, APIVersion: saslRawVersion}
	*c = call{cs: cs, req: req, seq: seq, hdr: hdr, body: req.Frame(), state: st, inline: inline, start: time.Now()}
	parked, ok := g.invoke(g.handler(wire.KeySaslAuthenticate), c)
	if ok && !parked {
		g.observe(c)
		g.putState(st)
	}
	return parked
}

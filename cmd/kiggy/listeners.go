package main

// Listeners and TLS (docs/design/security.md §4–5): --listeners and its
// companions in Kafka's syntax, and the --ssl-* settings of TLS listeners.

import (
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/tlsconf"
)

// listenerOptions are the settings of this file.
type listenerOptions struct {
	listeners, protocolMap, advertised string

	sslCertFile, sslKeyFile, sslCAFile string
	sslClientAuth, sslMinVersion       string
	sslPrincipalRules                  string
	sslHandshakeTimeout                time.Duration

	specs []listenerSpec // resolved by resolveListeners
}

func registerListenerOptions(s *settings, o *listenerOptions) {
	s.String("Listener", "listeners", &o.listeners, "", "Kafka listeners, NAME://host:port separated by commas (Kafka listeners, e.g. PLAINTEXT://127.0.0.1:9092,SSL://0.0.0.0:9093); empty = one PLAINTEXT listener on --listen")
	s.String("Listener", "listener-security-protocol-map", &o.protocolMap, "", "security protocol of each listener name, NAME:PROTOCOL separated by commas (Kafka listener.security.protocol.map); empty = each name is its protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)")
	s.String("Listener", "advertised-listeners", &o.advertised, "", "address clients of each listener are told to connect to, NAME://host:port separated by commas (Kafka advertised.listeners); a listener not named, an empty host or port 0 = the address the client reached")

	s.String("TLS", "ssl-cert-file", &o.sslCertFile, "", "PEM certificate chain of the TLS listeners (leaf first); reloaded when the file changes")
	s.String("TLS", "ssl-key-file", &o.sslKeyFile, "", "PEM private key of --ssl-cert-file; reloaded when the file changes")
	s.String("TLS", "ssl-ca-file", &o.sslCAFile, "", "PEM CA certificates that client certificates must chain to (Kafka ssl.truststore.location); needed unless --ssl-client-auth is none")
	s.String("TLS", "ssl-client-auth", &o.sslClientAuth, "none", "client certificates on TLS listeners: none, requested (verified when sent) or required (Kafka ssl.client.auth)")
	s.String("TLS", "ssl-min-version", &o.sslMinVersion, "TLSv1.2", "oldest TLS version accepted: TLSv1.2 or TLSv1.3")
	s.String("TLS", "ssl-principal-mapping-rules", &o.sslPrincipalRules, tlsconf.DefaultRules, "how a client certificate's subject (RFC 2253 DN) becomes the principal: DEFAULT and RULE:pattern/replacement/[LU], separated by commas (Kafka ssl.principal.mapping.rules)")
	s.Duration("TLS", "ssl-handshake-timeout", &o.sslHandshakeTimeout, engine.DefaultHandshakeTimeout, 100*time.Millisecond, 10*time.Minute, "close a TLS connection whose handshake takes longer")
}

// listenerSpec is one listener to open.
type listenerSpec struct {
	name     string
	protocol security.Protocol
	addr     string // host:port to bind
}

var listenerName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// resolveListeners checks the listener settings against each other and
// resolves o.lst.specs. s says which settings were given: --listen and
// --advertised-host/--advertised-port are the one-listener shorthand and
// conflict with --listeners.
func resolveListeners(s *settings, o *options) error {
	lo := &o.lst
	if lo.listeners == "" {
		for _, k := range []string{"listener-security-protocol-map", "advertised-listeners"} {
			if s.isSet(k) {
				return fmt.Errorf("--%s needs --listeners", k)
			}
		}
		lo.specs = []listenerSpec{{name: "PLAINTEXT", protocol: security.Plaintext, addr: o.listen}}
		return nil
	}
	for _, k := range []string{"listen", "advertised-host", "advertised-port"} {
		if s.isSet(k) {
			return fmt.Errorf("--%s is the one-listener shorthand and cannot be combined with --listeners (give the address in --listeners, and what to advertise in --advertised-listeners)", k)
		}
	}
	protos, err := parseProtocolMap(lo.protocolMap)
	if err != nil {
		return err
	}
	entries, err := parseListenerList("--listeners", lo.listeners)
	if err != nil {
		return err
	}
	ports := map[string]string{}
	for _, e := range entries {
		p, ok := protos[e.name]
		if !ok {
			if lo.protocolMap != "" {
				return fmt.Errorf("--listeners: listener %s is not in --listener-security-protocol-map", e.name)
			}
			return fmt.Errorf("--listeners: %s is not a security protocol; name the protocol of a named listener in --listener-security-protocol-map", e.name)
		}
		if _, port, _ := net.SplitHostPort(e.addr); port != "0" {
			if other, dup := ports[port]; dup {
				return fmt.Errorf("--listeners: %s and %s use the same port %s", other, e.name, port)
			}
			ports[port] = e.name
		}
		lo.specs = append(lo.specs, listenerSpec{name: e.name, protocol: p, addr: e.addr})
	}
	return nil
}

// listenerEntry is one NAME://host:port of a list.
type listenerEntry struct{ name, addr string }

func parseListenerList(flagName, s string) ([]listenerEntry, error) {
	var out []listenerEntry
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, hostport, ok := strings.Cut(item, "://")
		if !ok || !listenerName.MatchString(name) {
			return nil, fmt.Errorf("%s: %q: want NAME://host:port", flagName, item)
		}
		name = strings.ToUpper(name) // Kafka's listener names are case-insensitive
		host, port, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", flagName, item, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("%s: %q: port %q is not 0..65535", flagName, item, port)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: listener %s given twice", flagName, name)
		}
		seen[name] = true
		out = append(out, listenerEntry{name: name, addr: net.JoinHostPort(host, port)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no listener in %q", flagName, s)
	}
	return out, nil
}

// parseProtocolMap reads NAME:PROTOCOL,...; "" is Kafka's default map, in
// which each protocol name is a listener name of that protocol.
func parseProtocolMap(s string) (map[string]security.Protocol, error) {
	m := map[string]security.Protocol{}
	if strings.TrimSpace(s) == "" {
		for _, p := range []security.Protocol{security.Plaintext, security.SSL, security.SASLPlaintext, security.SASLSSL} {
			m[p.String()] = p
		}
		return m, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, proto, ok := strings.Cut(item, ":")
		if !ok || !listenerName.MatchString(name) {
			return nil, fmt.Errorf("--listener-security-protocol-map: %q: want NAME:PROTOCOL", item)
		}
		p, err := security.ParseProtocol(strings.TrimSpace(proto))
		if err != nil {
			return nil, fmt.Errorf("--listener-security-protocol-map: %q: %v", item, err)
		}
		name = strings.ToUpper(name)
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("--listener-security-protocol-map: %s given twice", name)
		}
		m[name] = p
	}
	return m, nil
}

// listenerSetup is what the listener settings give the gateway and the
// engine.
type listenerSetup struct {
	protocols  map[string]security.Protocol
	advertised map[string]bridge.AdvertisedAddr
	tls        *tlsconf.Server // nil without a TLS listener
}

// setupListeners loads the TLS configuration when a listener needs it and
// resolves the advertised addresses.
func setupListeners(o *options, logger *slog.Logger) (*listenerSetup, error) {
	lo := &o.lst
	ls := &listenerSetup{protocols: map[string]security.Protocol{}}
	needTLS := false
	for _, sp := range lo.specs {
		ls.protocols[sp.name] = sp.protocol
		needTLS = needTLS || sp.protocol.TLS()
	}
	if lo.advertised != "" {
		entries, err := parseListenerList("--advertised-listeners", lo.advertised)
		if err != nil {
			return nil, err
		}
		ls.advertised = map[string]bridge.AdvertisedAddr{}
		for _, e := range entries {
			if _, ok := ls.protocols[e.name]; !ok {
				return nil, fmt.Errorf("--advertised-listeners: %s is not a listener of --listeners", e.name)
			}
			host, port, _ := net.SplitHostPort(e.addr)
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				return nil, fmt.Errorf("--advertised-listeners: %s: %s is not an address a client can connect to", e.name, host)
			}
			n, _ := strconv.Atoi(port)
			ls.advertised[e.name] = bridge.AdvertisedAddr{Host: host, Port: int32(n)}
		}
	}
	if !needTLS {
		return ls, nil
	}
	auth, err := tlsconf.ParseClientAuth(lo.sslClientAuth)
	if err != nil {
		return nil, fmt.Errorf("--ssl-client-auth: %w", err)
	}
	minV, err := tlsconf.ParseMinVersion(lo.sslMinVersion)
	if err != nil {
		return nil, fmt.Errorf("--ssl-min-version: %w", err)
	}
	ls.tls, err = tlsconf.New(tlsconf.Config{
		CertFile:       lo.sslCertFile,
		KeyFile:        lo.sslKeyFile,
		CAFile:         lo.sslCAFile,
		ClientAuth:     auth,
		MinVersion:     minV,
		PrincipalRules: lo.sslPrincipalRules,
		Logger:         logger,
	})
	if err != nil {
		return nil, err
	}
	return ls, nil
}

// configure puts the listener settings into the gateway's configuration.
func (ls *listenerSetup) configure(cfg *bridge.Config) {
	cfg.Listeners = ls.protocols
	cfg.AdvertisedListeners = ls.advertised
	if ls.tls != nil {
		cfg.CertPrincipal = ls.tls.Principal
	}
}

// listen binds every listener; on error those already bound are closed.
func (ls *listenerSetup) listen(o *options) ([]*engine.Listener, error) {
	var out []*engine.Listener
	for _, sp := range o.lst.specs {
		ln, err := net.Listen("tcp", sp.addr)
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			if o.lst.listeners == "" {
				return nil, fmt.Errorf("--listen %s: %w", sp.addr, err)
			}
			return nil, fmt.Errorf("--listeners %s://%s: %w", sp.name, sp.addr, err)
		}
		el := &engine.Listener{Listener: ln, Name: sp.name, HandshakeTimeout: o.lst.sslHandshakeTimeout}
		if sp.protocol.TLS() {
			el.TLS = ls.tls.TLSConfig()
		}
		if sp.protocol.SASL() {
			// A SASL connection must authenticate in time, even one that
			// sends nothing (docs/design/security.md §7).
			el.AuthTimeout = o.sasl.handshakeTimeout
			// Nor may it send a large frame before (Kafka's
			// sasl.server.max.receive.size).
			el.MaxFrameBeforeAuth = int32(o.sasl.maxReceiveSize)
		}
		out = append(out, el)
	}
	return out, nil
}

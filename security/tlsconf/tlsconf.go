// Package tlsconf builds the server side of kiggy's TLS listeners
// (docs/design/security.md §5): a crypto/tls configuration from PEM files,
// the certificate and key reloaded when the files change, client
// certificates verified against a CA file when asked for, and a client
// certificate's subject mapped to a principal with Kafka's
// ssl.principal.mapping.rules.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/security"
)

// ClientAuth is whether a TLS listener asks for client certificates
// (Kafka's ssl.client.auth).
type ClientAuth uint8

// The client authentication modes. The zero value is ClientAuthNone.
const (
	// ClientAuthNone asks for no certificate; every client is anonymous.
	ClientAuthNone ClientAuth = iota
	// ClientAuthRequested asks for a certificate; a client that sends none
	// is anonymous, one that sends an untrusted one is refused.
	ClientAuthRequested
	// ClientAuthRequired refuses clients without a trusted certificate.
	ClientAuthRequired
)

var clientAuthNames = [...]string{"none", "requested", "required"}

// String returns Kafka's name of the mode.
func (a ClientAuth) String() string {
	if int(a) < len(clientAuthNames) {
		return clientAuthNames[a]
	}
	return "unknown"
}

// ParseClientAuth reads Kafka's ssl.client.auth value (none, requested,
// required; case-insensitive).
func ParseClientAuth(s string) (ClientAuth, error) {
	for i, n := range clientAuthNames {
		if strings.EqualFold(s, n) {
			return ClientAuth(i), nil
		}
	}
	return 0, fmt.Errorf("tlsconf: client auth %q: want none, requested or required", s)
}

// ParseMinVersion reads a minimum TLS version as Kafka names protocols
// (TLSv1.2, TLSv1.3) or bare (1.2, 1.3). Older versions are refused: they
// are broken, and Kafka 4 no longer enables them either.
func ParseMinVersion(s string) (uint16, error) {
	switch strings.TrimPrefix(strings.ToUpper(s), "TLSV") {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("tlsconf: minimum TLS version %q: want TLSv1.2 or TLSv1.3", s)
}

// DefaultReloadCheck is how often, at most, the certificate and key files
// are checked for changes.
const DefaultReloadCheck = time.Second

// Config configures a TLS listener. CertFile and KeyFile are required.
type Config struct {
	// CertFile is the PEM certificate chain the server presents (leaf
	// first). Kafka equivalent: ssl.keystore.location with a PEM keystore.
	CertFile string
	// KeyFile is the PEM private key of CertFile (PKCS #1, PKCS #8 or EC).
	KeyFile string
	// CAFile is the PEM bundle of CAs client certificates must chain to;
	// required unless ClientAuth is ClientAuthNone. Kafka equivalent:
	// ssl.truststore.location.
	CAFile string
	// ClientAuth is Kafka's ssl.client.auth.
	ClientAuth ClientAuth
	// MinVersion is the oldest TLS version accepted (tls.VersionTLS12 or
	// tls.VersionTLS13); 0 = TLS 1.2.
	MinVersion uint16
	// PrincipalRules is Kafka's ssl.principal.mapping.rules; "" = DEFAULT.
	PrincipalRules string
	// ReloadCheck bounds how often a handshake checks the certificate and
	// key files for changes (one stat of each); 0 = DefaultReloadCheck.
	ReloadCheck time.Duration
	// Logger receives reload events; nil = discard.
	Logger *slog.Logger
}

// Server is a loaded TLS listener configuration.
type Server struct {
	cfg    Config
	mapper *Mapper
	tls    *tls.Config

	cert      atomic.Pointer[tls.Certificate]
	nextCheck atomic.Int64 // unix nanos before which the files are not checked
	mu        sync.Mutex   // serializes reloads
	certStamp fileStamp    // guarded by mu
	keyStamp  fileStamp    // guarded by mu
}

// fileStamp is what a stat says about a file: a change of either means
// the file was replaced or rewritten.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// ErrNoCertificate is returned by New without a certificate or key file.
var ErrNoCertificate = errors.New("tlsconf: a TLS listener needs a certificate file and a key file (--ssl-cert-file, --ssl-key-file)")

// New loads cfg's files and returns the listener configuration.
func New(cfg Config) (*Server, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, ErrNoCertificate
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if cfg.MinVersion != tls.VersionTLS12 && cfg.MinVersion != tls.VersionTLS13 {
		return nil, fmt.Errorf("tlsconf: minimum TLS version %#x: want TLS 1.2 or 1.3", cfg.MinVersion)
	}
	if cfg.ClientAuth > ClientAuthRequired {
		return nil, fmt.Errorf("tlsconf: unknown client auth mode %d", cfg.ClientAuth)
	}
	if cfg.ReloadCheck <= 0 {
		cfg.ReloadCheck = DefaultReloadCheck
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := ParseRules(cfg.PrincipalRules)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mapper: m}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.nextCheck.Store(time.Now().Add(cfg.ReloadCheck).UnixNano())
	tc := &tls.Config{
		MinVersion:     cfg.MinVersion,
		GetCertificate: s.getCertificate,
	}
	switch cfg.ClientAuth {
	case ClientAuthRequested:
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if cfg.ClientAuth != ClientAuthNone {
		if cfg.CAFile == "" {
			return nil, fmt.Errorf("tlsconf: client auth %s needs a CA file (--ssl-ca-file) to verify client certificates", cfg.ClientAuth)
		}
		pool, err := loadPool(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		tc.ClientCAs = pool
		tc.VerifyConnection = s.verifyConnection
	}
	s.tls = tc
	return s, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsconf: CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// load reads the certificate and key; the stamps are taken before the
// reads, so a write during the read is seen as a change at the next check.
func (s *Server) load() error {
	cs, err1 := stamp(s.cfg.CertFile)
	ks, err2 := stamp(s.cfg.KeyFile)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("tlsconf: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("tlsconf: certificate %s with key %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
	}
	s.cert.Store(&cert)
	s.certStamp, s.keyStamp = cs, ks
	return nil
}

// TLSConfig returns the crypto/tls server configuration. It must not be
// modified.
func (s *Server) TLSConfig() *tls.Config { return s.tls }

// Certificate returns the certificate currently presented.
func (s *Server) Certificate() *tls.Certificate { return s.cert.Load() }

// getCertificate serves the current certificate. At most once per
// ReloadCheck one handshake stats the two files and, when either changed,
// reloads them; a pair that fails to load (a half-written file, a key
// that does not match) keeps the old certificate and is retried at the
// next check.
func (s *Server) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now().UnixNano()
	if next := s.nextCheck.Load(); now >= next && s.nextCheck.CompareAndSwap(next, now+int64(s.cfg.ReloadCheck)) {
		s.checkReload()
	}
	return s.cert.Load(), nil
}

func (s *Server) checkReload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, err1 := stamp(s.cfg.CertFile)
	ks, err2 := stamp(s.cfg.KeyFile)
	if err1 != nil || err2 != nil || cs == s.certStamp && ks == s.keyStamp {
		return
	}
	if err := s.load(); err != nil {
		s.cfg.Logger.Warn("tls: certificate changed but does not load; keeping the previous one", "err", err)
		return
	}
	s.cfg.Logger.Info("tls: certificate reloaded", "cert", s.cfg.CertFile, "not_after", s.cert.Load().Leaf.NotAfter)
}

// verifyConnection refuses a client whose verified certificate no mapping
// rule applies to, as Kafka fails the authentication then.
func (s *Server) verifyConnection(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	_, err := s.principal(cs.PeerCertificates[0])
	return err
}

func (s *Server) principal(cert *x509.Certificate) (security.Principal, error) {
	dn, err := SubjectDN(cert)
	if err != nil {
		return security.Principal{}, err
	}
	name, err := s.mapper.Name(dn)
	if err != nil {
		return security.Principal{}, err
	}
	return security.User(name), nil
}

// Principal returns who a TLS connection acts as: the mapped subject of its
// verified client certificate, or security.Anonymous without one (or when
// the listener does not ask for certificates, so none is verified).
func (s *Server) Principal(cs *tls.ConnectionState) security.Principal {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return security.Anonymous
	}
	p, err := s.principal(cs.PeerCertificates[0])
	if err != nil {
		return security.Anonymous // verifyConnection refused such clients
	}
	return p
}

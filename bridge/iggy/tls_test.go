package iggy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// testCA is a throw-away certificate authority for TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kiggy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert, key, pool}
}

// issue signs a leaf for cn, valid for 127.0.0.1, for server or client use.
func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLS: the client speaks TLS to a TLS listener, verifies the server
// against the CA it is given, refuses an untrusted server with ErrAuth, and
// presents its certificate to a server that requires one (mTLS).
func TestTLS(t *testing.T) {
	ca := newTestCA(t)
	serverCert := ca.issue(t, "iggy", x509.ExtKeyUsageServerAuth)
	clientCert := ca.issue(t, "kiggy", x509.ExtKeyUsageClientAuth)
	_, addr := startServer(t, iggytest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert}}})
	c := open(t, Config{Addr: addr, PoolSize: 1, TLS: &tls.Config{RootCAs: ca.pool}})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "t", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if base, err := c.Append(cx, "t", 0, batchOf(1, "m", 2)); err != nil || base != 0 {
		t.Fatalf("append over TLS: %d %v", base, err)
	}

	// An untrusted server certificate: the client says so.
	other := newTestCA(t)
	_, err := Open(cx, Config{Addr: addr, PoolSize: 1, TLS: &tls.Config{RootCAs: other.pool}, Logger: quiet})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("untrusted server: %v, want ErrAuth", err)
	}

	// mTLS: a server that requires a client certificate from the CA.
	_, maddr := startServer(t, iggytest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}})
	mc := open(t, Config{Addr: maddr, PoolSize: 1, TLS: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{clientCert}}})
	if err := mc.Ready(cx); err != nil {
		t.Fatalf("mTLS: %v", err)
	}
	if _, err := Open(cx, Config{Addr: maddr, PoolSize: 1, DialTimeout: 2 * time.Second, TLS: &tls.Config{RootCAs: ca.pool}, Logger: quiet}); err == nil {
		t.Fatal("mTLS server accepted a client without a certificate")
	}
}

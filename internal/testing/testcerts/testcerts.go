// Package testcerts makes throw-away X.509 certificates for TLS tests: a
// CA, server certificates for 127.0.0.1 and localhost, and client
// certificates with a chosen subject, written as PEM files.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// File is the CA certificate's PEM file.
	File string
}

// Pair is a certificate and its key, in memory and as PEM files.
type Pair struct {
	Cert     *x509.Certificate
	TLS      tls.Certificate
	CertFile string
	KeyFile  string
	// CombinedFile holds the key and then the certificate, the PEM
	// keystore form Kafka's ssl.keystore.type=PEM reads.
	CombinedFile string
}

var serial int64

func nextSerial() *big.Int {
	serial++
	return big.NewInt(time.Now().UnixNano() + serial)
}

// NewCA makes a CA called cn and writes its certificate to dir/<cn>.pem.
func NewCA(t testing.TB, dir, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"kiggy tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{Cert: cert, Key: key, File: filepath.Join(dir, cn+".pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Server makes a server certificate for 127.0.0.1, ::1 and localhost,
// written to dir/<name>.crt and dir/<name>.key.
func (ca *CA) Server(t testing.TB, dir, name string) *Pair {
	t.Helper()
	return ca.issue(t, dir, name, pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth)
}

// Client makes a client certificate with the given subject, written to
// dir/<name>.crt and dir/<name>.key.
func (ca *CA) Client(t testing.TB, dir, name string, subject pkix.Name) *Pair {
	t.Helper()
	return ca.issue(t, dir, name, subject, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(t testing.TB, dir, name string, subject pkix.Name, usage x509.ExtKeyUsage) *Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &Pair{Cert: cert, CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"),
		CombinedFile: filepath.Join(dir, name+".pem")}
	writePEM(t, p.CertFile, "CERTIFICATE", der)
	writePEM(t, p.KeyFile, "PRIVATE KEY", kder)
	combined := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(p.CombinedFile, combined, 0o600); err != nil {
		t.Fatal(err)
	}
	p.TLS = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	return p
}

// Pool returns a certificate pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

package interop

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/tlsconf"
)

// tlsRules is the ssl.principal.mapping.rules both targets run with: the
// lower-cased CN of a certificate of O=kiggy tests, else the full DN.
const tlsRules = `RULE:^CN=([^,]*),O=kiggy tests$/$1/L,DEFAULT`

// tlsTarget is a broker with a PLAINTEXT and an SSL listener: kiggy in
// process, or a real Kafka broker configured alike (KIGGY_INTEROP_TARGET).
type tlsTarget struct {
	name      string
	plainAddr string
	sslAddr   string
	dir       string
	ca        *testcerts.CA // signs the server's and the clients' certificates
	other     *testcerts.CA // an untrusted CA
	server    *testcerts.Pair
	alice     *testcerts.Pair // CN=Alice,O=kiggy tests: principal User:alice
	bob       *testcerts.Pair // no RULE applies: User:CN=Bob,OU=eng,O=elsewhere (DEFAULT)
	carol     *testcerts.Pair // User:carol, not a super user on Kafka
	mallory   *testcerts.Pair // signed by other

	// kiggy only
	gw         *bridge.Server
	mu         sync.Mutex
	principals []string
}

func (tt *tlsTarget) recordPrincipal(st *tls.ConnectionState, s *tlsconf.Server) security.Principal {
	p := s.Principal(st)
	tt.mu.Lock()
	tt.principals = append(tt.principals, p.String())
	tt.mu.Unlock()
	return p
}

// seen reports whether a connection has acted as principal p (kiggy).
func (tt *tlsTarget) seen(p string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return slices.Contains(tt.principals, p)
}

func newTLSTarget(t *testing.T, clientAuth string) *tlsTarget {
	t.Helper()
	dir := t.TempDir()
	tt := &tlsTarget{dir: dir}
	tt.ca = testcerts.NewCA(t, dir, "ca")
	tt.other = testcerts.NewCA(t, dir, "other-ca")
	tt.server = tt.ca.Server(t, dir, "server")
	tt.alice = tt.ca.Client(t, dir, "alice", pkix.Name{CommonName: "Alice", Organization: []string{"kiggy tests"}})
	tt.bob = tt.ca.Client(t, dir, "bob", pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"eng"}, Organization: []string{"elsewhere"}})
	tt.carol = tt.ca.Client(t, dir, "carol", pkix.Name{CommonName: "Carol", Organization: []string{"kiggy tests"}})
	tt.mallory = tt.other.Client(t, dir, "mallory", pkix.Name{CommonName: "Mallory", Organization: []string{"kiggy tests"}})
	switch v := os.Getenv(TargetEnv); v {
	case "", "kiggy":
		tt.startKiggy(t, clientAuth)
	case "kafka":
		java, cp := testtools.JavaClasspath(t)
		// Only these principals may do anything: a mapping that differs
		// from kiggy's fails the produce with TOPIC_AUTHORIZATION_FAILED.
		b := kafkatest.StartConfig(t, kafkatest.Config{Java: java, Classpath: cp, SSL: &kafkatest.SSL{
			KeystoreFile: tt.server.CombinedFile, TruststoreFile: tt.ca.File,
			ClientAuth: clientAuth, PrincipalMappingRules: tlsRules,
		}, Props: map[string]string{
			"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":           "User:ANONYMOUS;User:alice;User:CN=Bob,OU=eng,O=elsewhere",
		}})
		tt.name, tt.plainAddr, tt.sslAddr = "kafka", b.Addr, b.SSLAddr
	default:
		t.Fatalf("%s=%q: want kiggy (default) or kafka", TargetEnv, v)
	}
	return tt
}

// startKiggy runs the gateway as cmd/kiggy wires --listeners
// PLAINTEXT://…,SSL://… with the --ssl-* settings.
func (tt *tlsTarget) startKiggy(t *testing.T, clientAuth string) {
	t.Helper()
	auth, err := tlsconf.ParseClientAuth(clientAuth)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tlsconf.New(tlsconf.Config{CertFile: tt.server.CertFile, KeyFile: tt.server.KeyFile, CAFile: tt.ca.File,
		ClientAuth: auth, PrincipalRules: tlsRules, ReloadCheck: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	store := memlog.New(memlog.Config{})
	s, err := bridge.NewServer(os.Getenv("KIGGY_TEST_ENGINE"), engine.Config{}, bridge.Config{
		Listeners:     map[string]security.Protocol{"PLAINTEXT": security.Plaintext, "SSL": security.SSL},
		CertPrincipal: func(st *tls.ConnectionState) security.Principal { return tt.recordPrincipal(st, ts) },
	}, store)
	if err != nil {
		t.Fatal(err)
	}
	tt.gw, tt.name = s, "kiggy"
	var wg sync.WaitGroup
	for _, l := range []struct {
		name string
		tls  *tls.Config
		addr *string
	}{{"PLAINTEXT", nil, &tt.plainAddr}, {"SSL", ts.TLSConfig(), &tt.sslAddr}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		*l.addr = ln.Addr().String()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Serve(&engine.Listener{Listener: ln, Name: l.name, TLS: l.tls}); err != nil {
				t.Errorf("Serve %s: %v", l.name, err)
			}
		}()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		wg.Wait()
		_ = store.Close()
	})
}

// clientTLS is a client configuration trusting roots, presenting cert
// (nil = none).
func (tt *tlsTarget) clientTLS(roots *testcerts.CA, cert *testcerts.Pair) *tls.Config {
	cc := &tls.Config{RootCAs: roots.Pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		// Sent even when the server does not name its CA as acceptable.
		cc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert.TLS, nil }
	}
	return cc
}

func (tt *tlsTarget) client(t testing.TB, addr string, cc *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(2), kgo.RetryTimeout(15 * time.Second)}, opts...)
	if cc != nil {
		opts = append(opts, kgo.DialTLSConfig(cc))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a one-partition topic over the plaintext listener.
func (tt *tlsTarget) createTopic(t testing.TB, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(tt.client(t, tt.plainAddr, nil))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	var err error
	if !testtools.Eventually(time.Until(deadlineOf(ctx)), func() bool { err = topicReady(ctx, adm, topic, 1); return err == nil }) {
		t.Fatalf("topic %s not ready: %v", topic, err)
	}
}

// consume reads n records of topic/0 from its start over TLS.
func (tt *tlsTarget) consume(t testing.TB, cc *tls.Config, topic string, n int) []string {
	t.Helper()
	cl := tt.client(t, tt.sslAddr, cc, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s over TLS: %v", len(got), n, topic, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// TestTLS runs stock clients against a broker whose SSL listener asks for
// client certificates (ssl.client.auth=requested), next to a PLAINTEXT
// listener: TLS without and with a client certificate, the principal of
// the certificate, the advertised address per listener, untrusted
// certificates refused, and (kiggy) certificate reload.
func TestTLS(t *testing.T) {
	tt := newTLSTarget(t, "requested")
	t.Logf("%s: PLAINTEXT %s, SSL %s", tt.name, tt.plainAddr, tt.sslAddr)

	t.Run("franz-go", func(t *testing.T) {
		for _, c := range []struct {
			name, principal string
			cert            *testcerts.Pair
		}{
			{"tls", "User:ANONYMOUS", nil},
			{"mtls", "User:alice", tt.alice},
			{"mtls-default-rule", "User:CN=Bob,OU=eng,O=elsewhere", tt.bob},
		} {
			t.Run(c.name, func(t *testing.T) {
				topic := topicName(t)
				tt.createTopic(t, topic)
				cc := tt.clientTLS(tt.ca, c.cert)
				cl := tt.client(t, tt.sslAddr, cc, kgo.DefaultProduceTopic(topic))
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				want := values(c.name, 50)
				var rs []*kgo.Record
				for _, v := range want {
					rs = append(rs, &kgo.Record{Value: []byte(v)})
				}
				if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					t.Fatalf("produce over TLS: %v", err)
				}
				if got := tt.consume(t, cc, topic, len(want)); !slices.Equal(got, want) {
					t.Fatalf("consumed %q, want %q", got, want)
				}
				if tt.gw != nil && !tt.seen(c.principal) {
					t.Errorf("no connection acted as %s; principals seen %v", c.principal, tt.principals)
				}
			})
		}
		t.Run("kafka-control", func(t *testing.T) {
			if tt.gw != nil {
				t.Skip("kiggy has no authorizer on this branch; on Kafka this proves the principals above")
			}
			// User:carol is no super user: Kafka's authorizer refuses it,
			// so the produces above passed because of their principals.
			topic := topicName(t)
			tt.createTopic(t, topic)
			cl := tt.client(t, tt.sslAddr, tt.clientTLS(tt.ca, tt.carol), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil || !strings.Contains(err.Error(), "AUTHORIZATION") {
				t.Fatalf("User:carol produced: %v; want an authorization error", err)
			}
		})
	})

	t.Run("advertised-per-listener", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, c := range []struct {
			addr string
			cc   *tls.Config
		}{{tt.plainAddr, nil}, {tt.sslAddr, tt.clientTLS(tt.ca, nil)}} {
			md, err := kadm.NewClient(tt.client(t, c.addr, c.cc)).BrokerMetadata(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(md.Brokers) != 1 || net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))) != c.addr {
				t.Errorf("Metadata over %s lists brokers %+v, want the listener's own address", c.addr, md.Brokers)
			}
		}
	})

	t.Run("untrusted-client-certificate", func(t *testing.T) {
		var closes uint64
		if tt.gw != nil {
			closes = tt.gw.Engine.Stats().Closes[engine.ReasonTLSHandshake]
		}
		cl := tt.client(t, tt.sslAddr, tt.clientTLS(tt.ca, tt.mallory), kgo.RequestRetries(0), kgo.RetryTimeout(3*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := cl.Ping(ctx)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("a client certificate of an untrusted CA: Ping = %v, want a certificate error", err)
		}
		t.Logf("franz-go: %v", err)
		expectRefused(t, tt.sslAddr, tt.clientTLS(tt.ca, tt.mallory))
		if tt.gw != nil {
			if n := tt.gw.Engine.Stats().Closes[engine.ReasonTLSHandshake]; n <= closes {
				t.Errorf("tls_handshake closes %d, before %d", n, closes)
			}
		}
	})

	t.Run("untrusted-server", func(t *testing.T) {
		cl := tt.client(t, tt.sslAddr, tt.clientTLS(tt.other, nil), kgo.RequestRetries(0), kgo.RetryTimeout(3*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); err == nil || !strings.Contains(err.Error(), "unknown authority") {
			t.Fatalf("a client that does not trust the server's CA: Ping = %v, want x509 unknown authority", err)
		}
	})

	t.Run("kcat", func(t *testing.T) {
		kcat := testtools.Kcat(t)
		for _, c := range []struct {
			name string
			cert *testcerts.Pair
		}{{"tls", nil}, {"mtls", tt.alice}} {
			t.Run(c.name, func(t *testing.T) {
				topic := topicName(t)
				tt.createTopic(t, topic)
				args := []string{"-b", tt.sslAddr, "-t", topic, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + tt.ca.File}
				if c.cert != nil {
					args = append(args, "-X", "ssl.certificate.location="+c.cert.CertFile, "-X", "ssl.key.location="+c.cert.KeyFile)
				}
				want := values("kcat-"+c.name, 20)
				r := run(t, time.Minute, []byte(strings.Join(want, "\n")+"\n"), kcat, append([]string{"-P"}, args...)...)
				if r.code != 0 {
					t.Fatalf("kcat -P over TLS:\n%s", r)
				}
				r = run(t, time.Minute, nil, kcat, append([]string{"-C", "-o", "beginning", "-e", "-c", strconv.Itoa(len(want)), "-f", "%s\n"}, args...)...)
				if r.code != 0 {
					t.Fatalf("kcat -C over TLS:\n%s", r)
				}
				if got := strings.Fields(r.stdout); !slices.Equal(got, want) {
					t.Fatalf("kcat consumed %q, want %q", got, want)
				}
				if tt.gw != nil && c.cert != nil && !tt.seen("User:alice") {
					t.Errorf("kcat's connections did not act as User:alice: %v", tt.principals)
				}
			})
		}
		// An untrusted client certificate: kcat reports the broker's refusal.
		r := run(t, time.Minute, nil, kcat, "-L", "-b", tt.sslAddr, "-m", "5", "-X", "security.protocol=ssl",
			"-X", "ssl.ca.location="+tt.ca.File, "-X", "ssl.certificate.location="+tt.mallory.CertFile, "-X", "ssl.key.location="+tt.mallory.KeyFile)
		if r.code == 0 || !strings.Contains(strings.ToLower(r.stderr), "ssl") {
			t.Fatalf("kcat with an untrusted client certificate:\n%s", r)
		}
	})

	t.Run("java", func(t *testing.T) {
		testtools.JavaClasspath(t)
		topic := topicName(t)
		tt.createTopic(t, topic)
		props := filepath.Join(t.TempDir(), "client.properties")
		os.WriteFile(props, []byte(strings.Join([]string{
			"security.protocol=SSL",
			"ssl.truststore.type=PEM",
			"ssl.truststore.location=" + tt.ca.File,
			"ssl.keystore.type=PEM",
			"ssl.keystore.location=" + tt.alice.CombinedFile,
			"",
		}, "\n")), 0o600)
		want := values("java", 20)
		r := runJava(t, 2*time.Minute, []byte(strings.Join(want, "\n")+"\n"), "", "org.apache.kafka.tools.ConsoleProducer",
			"--bootstrap-server", tt.sslAddr, "--topic", topic, "--command-config", props)
		if r.code != 0 || strings.Contains(r.stderr, "Error when sending message") {
			t.Fatalf("ConsoleProducer over mTLS failed:\n%s", r)
		}
		r = runJava(t, 2*time.Minute, nil, "", consoleConsumer, "--bootstrap-server", tt.sslAddr, "--topic", topic,
			"--from-beginning", "--max-messages", strconv.Itoa(len(want)), "--timeout-ms", "60000", "--command-config", props)
		if r.code != 0 {
			t.Fatalf("ConsoleConsumer over mTLS failed:\n%s", r)
		}
		if got := strings.Fields(r.stdout); !slices.Equal(got, want) {
			t.Fatalf("ConsoleConsumer read %q, want %q\n%s", got, want, r)
		}
		if tt.gw != nil && !tt.seen("User:alice") {
			t.Errorf("the Java clients' connections did not act as User:alice: %v", tt.principals)
		}
	})

	t.Run("reload", func(t *testing.T) {
		if tt.gw == nil {
			t.Skip("Kafka reloads keystores through a dynamic config update, not a file change")
		}
		cc := tt.clientTLS(tt.ca, nil)
		old, err := tls.Dial("tcp", tt.sslAddr, cc)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		first := old.ConnectionState().PeerCertificates[0].SerialNumber
		if err := apiVersions(old, 1); err != nil {
			t.Fatal(err)
		}
		next := tt.ca.Server(t, t.TempDir(), "server")
		for _, f := range [][2]string{{next.KeyFile, tt.server.KeyFile}, {next.CertFile, tt.server.CertFile}} {
			b, err := os.ReadFile(f[0])
			if err != nil {
				t.Fatal(err)
			}
			// Written to a temporary file and renamed, as a certificate
			// manager replaces files.
			if err := os.WriteFile(f[1]+".tmp", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f[1]+".tmp", f[1]); err != nil {
				t.Fatal(err)
			}
		}
		var got *big.Int
		if !testtools.Eventually(20*time.Second, func() bool {
			c, err := tls.Dial("tcp", tt.sslAddr, cc)
			if err != nil {
				t.Fatal(err)
			}
			got = c.ConnectionState().PeerCertificates[0].SerialNumber
			c.Close()
			if got.Cmp(first) != 0 && got.Cmp(next.Cert.SerialNumber) != 0 {
				t.Fatalf("new connections get certificate %v; want the first %v or the replaced one %v", got, first, next.Cert.SerialNumber)
			}
			return got.Cmp(next.Cert.SerialNumber) == 0
		}) {
			t.Fatalf("new connections get certificate %v; want the replaced one %v", got, next.Cert.SerialNumber)
		}
		if err := apiVersions(old, 2); err != nil {
			t.Fatalf("a connection made before the reload: %v", err)
		}
	})
}

// TestTLSRequired: with ssl.client.auth=required a client without a
// certificate is refused and one with a trusted certificate served.
func TestTLSRequired(t *testing.T) {
	tt := newTLSTarget(t, "required")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := tt.client(t, tt.sslAddr, tt.clientTLS(tt.ca, nil), kgo.RequestRetries(0), kgo.RetryTimeout(3*time.Second))
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a client without a certificate was served")
	} else {
		t.Logf("franz-go without a certificate: %v", err)
	}
	expectRefused(t, tt.sslAddr, tt.clientTLS(tt.ca, nil))
	cl = tt.client(t, tt.sslAddr, tt.clientTLS(tt.ca, tt.alice))
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if tt.gw != nil && !tt.seen("User:alice") {
		t.Errorf("alice's connection did not act as User:alice: %v", tt.principals)
	}
}

// expectRefused checks that the server ends a connection made with cc
// without serving it: the handshake fails, or (TLS 1.3, where the client
// finishes first) the first read after an ApiVersions request does.
func expectRefused(t *testing.T, addr string, cc *tls.Config) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cc)
	if err != nil {
		return
	}
	defer c.Close()
	if err := apiVersions(c, 1); err == nil {
		t.Fatal("a refused client was answered")
	} else {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open: %v", err)
		}
	}
}

// apiVersions sends ApiVersions v0 with correlation id corr on c and reads
// the response header.
func apiVersions(c net.Conn, corr int32) error {
	req := binary.BigEndian.AppendUint32(nil, 10)
	req = binary.BigEndian.AppendUint16(req, 18) // ApiVersions
	req = binary.BigEndian.AppendUint16(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(corr))
	req = binary.BigEndian.AppendUint16(req, 0xffff) // client id null
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr || size < 4 {
		return fmt.Errorf("response correlation %d size %d, want %d", got, size, corr)
	}
	_, err := io.CopyN(io.Discard, c, int64(size-4))
	return err
}

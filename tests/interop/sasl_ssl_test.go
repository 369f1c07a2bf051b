package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
	"github.com/kiggy-io/kiggy/security/tlsconf"
)

// saslSSLTarget starts a broker with a SASL_SSL listener (PLAIN user
// alice:secret, SCRAM user bob:hunter2, a server certificate of ca): kiggy
// as cmd/kiggy wires --listeners SASL_SSL://… with the --ssl-* and --sasl-*
// settings, or a real Kafka broker configured alike (KIGGY_INTEROP_TARGET).
// It returns the listener's address.
func saslSSLTarget(t *testing.T, ca *testcerts.CA, server *testcerts.Pair) string {
	t.Helper()
	switch os.Getenv(TargetEnv) {
	case "kafka":
		java, cp := testtools.JavaClasspath(t)
		b := kafkatest.StartConfig(t, kafkatest.Config{Java: java, Classpath: cp, Heap: "512m",
			SSL: &kafkatest.SSL{KeystoreFile: server.CombinedFile},
			SASL: &kafkatest.SASLConfig{
				PlainUsers: map[string]string{plainUser: plainPass},
				ScramUsers: map[string]string{scramUser: scramPass},
			}})
		return b.SASLSSLAddr
	}
	ts, err := tlsconf.New(tlsconf.Config{CertFile: server.CertFile, KeyFile: server.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	users, err := sasl.ParsePlainUsers(strings.NewReader(plainUser+":"+plainPass+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	store := memlog.New(memlog.Config{})
	s, err := bridge.NewServer(os.Getenv("KIGGY_TEST_ENGINE"), engine.Config{}, bridge.Config{
		Listeners: map[string]security.Protocol{"SASL_SSL": security.SASLSSL},
		SASL: bridge.SASLConfig{Plain: users, Scram: true,
			ScramBootstrap: map[string]string{scramUser: scramPass}},
	}, store)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Serve(&engine.Listener{Listener: ln, Name: "SASL_SSL", TLS: ts.TLSConfig(), AuthTimeout: bridge.DefaultSASLHandshakeTimeout}); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		wg.Wait()
		_ = store.Close()
	})
	return ln.Addr().String()
}

// TestSASLSSL: SASL over TLS (a SASL_SSL listener) with kcat (PLAIN; its
// librdkafka's SCRAM is refused by Kafka 4.4 as by kiggy, TestSASLKcat),
// the Java console producer and consumer (SCRAM-SHA-512 and PLAIN, PEM
// truststore) and franz-go (SCRAM-SHA-256); a wrong password fails each
// client with its usual error.
func TestSASLSSL(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	addr := saslSSLTarget(t, ca, ca.Server(t, dir, "server"))

	t.Run("franz-go/SCRAM-SHA-256", func(t *testing.T) {
		topic := topicName(t)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}),
			kgo.SASL(kscram.Auth{User: scramUser, Pass: scramPass}.AsSha256Mechanism()),
			kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := range 5 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		got := 0
		for got < 5 {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %d of 5: %v", got, err)
			}
			got += fs.NumRecords()
		}
	})

	t.Run("kcat/PLAIN", func(t *testing.T) {
		kcat := testtools.Kcat(t)
		topic := topicName(t)
		x := []string{"-b", addr, "-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + ca.File,
			"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=" + plainUser}
		in, want := lines("sasl-ssl", 30)
		if r := run(t, time.Minute, in, kcat, append(x, "-X", "sasl.password="+plainPass, "-P", "-t", topic)...); r.code != 0 {
			t.Fatalf("kcat -P:\n%s", r)
		}
		r := run(t, time.Minute, nil, kcat, append(x, "-X", "sasl.password="+plainPass, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...)
		if r.code != 0 {
			t.Fatalf("kcat -C:\n%s", r)
		}
		sameLines(t, "kcat -C", strings.Fields(r.stdout), want)
		r = run(t, time.Minute, nil, kcat, append(x, "-X", "sasl.password=wrong", "-L", "-m", "5")...)
		if r.code == 0 || !strings.Contains(r.stderr, "Authentication failed") {
			t.Errorf("kcat -L with a wrong password: want a failure naming \"Authentication failed\":\n%s", r)
		}
	})

	t.Run("java-console", func(t *testing.T) {
		testtools.JavaClasspath(t)
		for _, tc := range []struct{ mech, module, user, pass string }{
			{"SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", scramUser, scramPass},
			{"PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", plainUser, plainPass},
		} {
			topic := topicName(t) + "-" + strings.ToLower(tc.mech)
			props := filepath.Join(t.TempDir(), "client.properties")
			body := fmt.Sprintf("security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\nsasl.mechanism=%s\nsasl.jaas.config=%s required username=\"%s\" password=\"%s\";\n",
				ca.File, tc.mech, tc.module, tc.user, tc.pass)
			if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			in, want := lines(tc.mech, 20)
			r := runJava(t, 2*time.Minute, in, "", "org.apache.kafka.tools.ConsoleProducer",
				"--bootstrap-server", addr, "--topic", topic, "--command-config", props)
			if r.code != 0 || strings.Contains(r.stderr, "ERROR") {
				t.Fatalf("%s ConsoleProducer:\n%s", tc.mech, r)
			}
			r = runJava(t, 2*time.Minute, nil, "", consoleConsumer, "--bootstrap-server", addr, "--topic", topic,
				"--from-beginning", "--max-messages", fmt.Sprint(len(want)), "--command-config", props)
			if r.code != 0 {
				t.Fatalf("%s ConsoleConsumer:\n%s", tc.mech, r)
			}
			sameLines(t, tc.mech+" ConsoleConsumer", strings.Fields(r.stdout), want)
			if tc.mech != "PLAIN" {
				continue
			}
			wrong := strings.Replace(body, `password="`+tc.pass, `password="wrong`, 1)
			if err := os.WriteFile(props, []byte(wrong), 0o600); err != nil {
				t.Fatal(err)
			}
			r = runJava(t, 2*time.Minute, []byte("x\n"), "", "org.apache.kafka.tools.ConsoleProducer",
				"--bootstrap-server", addr, "--topic", topic, "--command-config", props)
			if !strings.Contains(r.stdout+r.stderr, "SaslAuthenticationException") {
				t.Errorf("ConsoleProducer with a wrong password: want SaslAuthenticationException:\n%s", r)
			}
		}
	})
}

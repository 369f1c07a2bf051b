package bridge_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testcerts"
	"github.com/kiggy-io/kiggy/security"
)

// TestSASLOverTLS: a SASL_SSL listener authenticates inside TLS (franz-go
// SCRAM-SHA-512 over TLS produces and consumes; a wrong password is
// SASL_AUTHENTICATION_FAILED), while a PLAINTEXT listener of the same
// gateway serves without SASL.
func TestSASLOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	srv := ca.Server(t, dir, "server")
	store := memlog.New(memlog.Config{})
	s, err := bridge.NewServer("", engine.Config{}, bridge.Config{
		Listeners: map[string]security.Protocol{"PLAINTEXT": security.Plaintext, "SASL_SSL": security.SASLSSL},
		SASL:      bridge.SASLConfig{Scram: true, ScramBootstrap: map[string]string{"bob": "hunter2"}},
	}, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		_ = store.Close()
	})
	addrs := map[string]string{}
	for _, name := range []string{"PLAINTEXT", "SASL_SSL"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := &engine.Listener{Listener: ln, Name: name}
		if name == "SASL_SSL" {
			l.TLS = &tls.Config{Certificates: []tls.Certificate{srv.TLS}}
		}
		go s.Serve(l)
		addrs[name] = ln.Addr().String()
	}
	ccfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if err := saslRoundTripOpts(t, addrs["SASL_SSL"], "tls-sasl",
		kgo.SASL(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha512Mechanism()), kgo.DialTLSConfig(ccfg)); err != nil {
		t.Fatalf("SCRAM over TLS: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bad, err := kgo.NewClient(kgo.SeedBrokers(addrs["SASL_SSL"]), kgo.DialTLSConfig(ccfg), kgo.RequestRetries(0),
		kgo.SASL(kscram.Auth{User: "bob", Pass: "nope"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password over TLS: %v", err)
	}
	// The PLAINTEXT listener needs no SASL; SaslHandshake there is
	// ILLEGAL_SASL_STATE, as KafkaApis answers it.
	pl, err := kgo.NewClient(kgo.SeedBrokers(addrs["PLAINTEXT"]), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	if _, err := pl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Errorf("PLAINTEXT Metadata: %v", err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	r, err := pl.Request(ctx, hs)
	if err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslHandshake on PLAINTEXT: %v %+v", err, r)
	}
	if m := metricsOf(s); !strings.Contains(m, `kiggy_sasl_authentications_total{mechanism="SCRAM-SHA-512",outcome="success"}`) {
		t.Error("no SCRAM success counted")
	}
}

func metricsOf(s *bridge.Server) string {
	var b strings.Builder
	s.Gateway.WriteMetrics(&b)
	return b.String()
}

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
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
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

// TestSASLAuthTimeout: on a listener with an AuthTimeout, the engine closes
// a connection that sends nothing and one stopped after SaslHandshake, on
// both engines, while an authenticated one stays open.
func TestSASLAuthTimeout(t *testing.T) {
	for _, kind := range []string{"epoll", "net"} {
		t.Run(kind, func(t *testing.T) {
			store := memlog.New(memlog.Config{})
			s, err := bridge.NewServer(kind, engine.Config{}, bridge.Config{
				Listeners: map[string]security.Protocol{"SASL_PLAINTEXT": security.SASLPlaintext},
				SASL:      bridge.SASLConfig{Scram: true, ScramBootstrap: map[string]string{"bob": "hunter2"}},
			}, store)
			if err != nil {
				t.Skip(err) // epoll off Linux
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.Shutdown(ctx)
				_ = store.Close()
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go s.Serve(&engine.Listener{Listener: ln, Name: "SASL_PLAINTEXT", AuthTimeout: 300 * time.Millisecond})
			addr := ln.Addr().String()
			silent, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer silent.Close()
			half, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer half.Close()
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
			if _, err := half.Write(requestFrame(hs, 1)); err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(kscram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]net.Conn{"silent": silent, "half": half} {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 256)
				for {
					if _, err := c.Read(buf); err != nil {
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() {
							t.Errorf("%s: still open 5 s after a 300 ms AuthTimeout", name)
						}
						break
					}
				}
			}
			// Past the 300 ms AuthTimeout: the authenticated client's
			// connection must outlive it.
			time.Sleep(500 * time.Millisecond) // the 300 ms AuthTimeout passes: what this case is about
			if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
				t.Errorf("authenticated client after the timeout: %v", err)
			}
		})
	}
}

package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
)

// failedAuthDelay is connection.failed.authentication.delay.ms's default
// (KIP-306), which both targets run with.
const failedAuthDelay = 100 * time.Millisecond

// TestSASLFailedAuthenticationDelay: a failed authentication is answered,
// and its connection closed, no sooner than connection.failed.authentication.delay.ms
// after the request, on kiggy as on Kafka 4.4 (whose answer comes at its
// network thread's next poll after the delay: 300 ms in a probe): a wrong
// PLAIN password (SASL_AUTHENTICATION_FAILED), a wrong password as a bare
// token after SaslHandshake v0 (closed unanswered), a mechanism not enabled
// (UNSUPPORTED_SASL_MECHANISM), a request other than SaslAuthenticate after
// SaslHandshake (closed; Kafka answers it with its error response first,
// kiggy does not), and a Metadata request pipelined behind a wrong password,
// which is never answered. A request before SaslHandshake is closed at once
// on both (Kafka fails no authentication there), which this test does not
// time.
func TestSASLFailedAuthenticationDelay(t *testing.T) {
	addr := saslAddr(t)
	dial := func(t *testing.T) *kafkawire.Conn {
		c, err := kafkawire.Dial(addr, "delay", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	handshake := func(t *testing.T, c *kafkawire.Conn, version int16, mech string) int16 {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = version, mech
		r, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("SaslHandshake v%d %s: %v", version, mech, err)
		}
		return r.(*kmsg.SASLHandshakeResponse).ErrorCode
	}
	wrong := []byte("\x00" + plainUser + "\x00not-" + plainPass)
	// atLeast fails t when took is under the delay.
	atLeast := func(t *testing.T, what string, took time.Duration) {
		t.Helper()
		if took < failedAuthDelay {
			t.Errorf("%s after %v, want no sooner than %v", what, took, failedAuthDelay)
		}
	}
	closed := func(t *testing.T, c *kafkawire.Conn) {
		t.Helper()
		if err := c.ExpectClosed(10 * time.Second); err != nil {
			t.Errorf("connection after the failure: %v", err)
		}
	}

	t.Run("wrong password", func(t *testing.T) {
		c := dial(t)
		handshake(t, c, 1, "PLAIN")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, wrong
		sent := time.Now()
		r, err := c.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		atLeast(t, "SASL_AUTHENTICATION_FAILED", time.Since(sent))
		if code := r.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != 58 {
			t.Errorf("SaslAuthenticate with a wrong password answered %d, want 58", code)
		}
		closed(t, c)
	})
	t.Run("bare token after SaslHandshake v0", func(t *testing.T) {
		c := dial(t)
		handshake(t, c, 0, "PLAIN")
		sent := time.Now()
		if err := c.Write(append([]byte{0, 0, 0, byte(len(wrong))}, wrong...)); err != nil {
			t.Fatal(err)
		}
		if f, err := c.ReadFrame(10 * time.Second); err == nil {
			t.Errorf("a wrong bare token answered %x, want the connection closed", f)
		}
		atLeast(t, "the close", time.Since(sent))
	})
	t.Run("mechanism not enabled", func(t *testing.T) {
		c := dial(t)
		sent := time.Now()
		if code := handshake(t, c, 1, "GSSAPI"); code != 33 {
			t.Errorf("SaslHandshake GSSAPI answered %d, want 33", code)
		}
		atLeast(t, "UNSUPPORTED_SASL_MECHANISM", time.Since(sent))
		closed(t, c)
	})
	t.Run("other request after SaslHandshake", func(t *testing.T) {
		c := dial(t)
		handshake(t, c, 1, "PLAIN")
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		sent := time.Now()
		if _, err := c.Send(md); err != nil {
			t.Fatal(err)
		}
		// Kafka answers with an empty Metadata response, kiggy does not.
		_, _ = c.ReadFrame(10 * time.Second)
		closed(t, c)
		atLeast(t, "the close", time.Since(sent))
	})
	t.Run("request pipelined behind a wrong password", func(t *testing.T) {
		c := dial(t)
		handshake(t, c, 1, "PLAIN")
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version, au.SASLAuthBytes = 2, wrong
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		b := kafkawire.AppendRequest(nil, au, 100, "delay")
		b = kafkawire.AppendRequest(b, md, 101, "delay")
		sent := time.Now()
		if err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		var r kmsg.SASLAuthenticateResponse
		r.Version = 2
		if err := c.Recv(100, &r); err != nil {
			t.Fatal(err)
		}
		atLeast(t, "SASL_AUTHENTICATION_FAILED", time.Since(sent))
		if r.ErrorCode != 58 {
			t.Errorf("SaslAuthenticate with a wrong password answered %d, want 58", r.ErrorCode)
		}
		if f, err := c.ReadFrame(10 * time.Second); err == nil {
			t.Errorf("the Metadata behind the failure was answered (%d bytes), want the connection closed", len(f))
		}
	})
}

// TestSASLMaxReceiveSize: sasl.server.max.receive.size (512 KiB by default on
// both targets) bounds what a connection of a SASL listener may send before
// it authenticates: a request frame of 600 KiB sent before SaslHandshake is
// not answered and its connection is closed, while a producer that has
// authenticated (PLAIN) sends a 600 KiB record and has it acknowledged.
func TestSASLMaxReceiveSize(t *testing.T) {
	addr := saslAddr(t)
	const size = 600 << 10
	c, err := kafkawire.Dial(addr, "big", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A valid ApiVersions of 600 KiB: its client software name (letters
	// only, as Kafka's check wants) makes it that large.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = strings.Repeat("a", size), "1"
	b := kafkawire.AppendRequest(nil, req, 1, "big")
	_ = c.Write(b) // the server may close before all of it is written
	if f, err := c.ReadFrame(10 * time.Second); err == nil {
		t.Errorf("a %d-byte request before authentication answered (%d bytes), want the connection closed", len(b)-4, len(f))
	}

	topic := topicName(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.SASL(plain.Auth{User: plainUser, Pass: plainPass}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, size)}).FirstErr(); err != nil {
		t.Errorf("a %d-byte record after authentication: %v", size, err)
	}
}

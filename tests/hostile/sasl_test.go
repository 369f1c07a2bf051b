//go:build linux

package hostile

import (
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
)

// TestHostileSASL runs kiggy with a SASL_PLAINTEXT listener and holds a
// thousand connections that never finish authenticating (silent ones,
// ones stopped after SaslHandshake, ones stopped in the middle of a SCRAM
// exchange) while others send garbage authentications and unauthenticated
// Produce requests, and an authenticated producer keeps producing: it must
// see no stall, the gateway must hold nothing per dawdling connection (no
// goroutine on the epoll engine), and the garbage must be refused, counted
// and closed (docs/design/security.md §7).
func TestHostileSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kiggy process; skipped with -short")
	}
	raiseNoFile(t, 16384)
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("good:pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := startKiggy(t, "--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-plain-users-file", users,
		"--sasl-scram-bootstrap-users-file", users, "--idle-timeout", "2m", "--sasl-handshake-timeout", "2m")
	auth := kgo.SASL(plain.Auth{User: "good", Pass: "pw"}.AsMechanism())
	ctx := ctxFor(t, 30*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topicGood); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	m0 := k.metrics(t)
	p := startProducer(t, k.Addr, topicGood, auth)
	waitFor(t, 15*time.Second, "the good producer's first 100 acks", func() bool { return p.acked() >= 100 })
	sched := startSched(k.Pid)
	t.Cleanup(sched.stop)
	from := time.Now()

	const idle = 1000
	var mu sync.Mutex
	var held []net.Conn
	keep := func(c net.Conn) {
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, idle+200)
	for i := range idle {
		wg.Go(func() {
			c, err := kafkawire.Dial(k.Addr, "dawdler", 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			keep(c.NetConn())
			switch i % 3 {
			case 0: // silent
			case 1: // SaslHandshake, then nothing
				hs := kmsg.NewPtrSASLHandshakeRequest()
				hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
				if _, err := c.RoundTrip(hs); err != nil {
					errs <- err
				}
			case 2: // the SCRAM client-first, then nothing
				hs := kmsg.NewPtrSASLHandshakeRequest()
				hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
				au := kmsg.NewPtrSASLAuthenticateRequest()
				au.Version, au.SASLAuthBytes = 2, []byte("n,,n=good,r=abcdefgh")
				if _, err := c.RoundTrip(hs); err != nil {
					errs <- err
				} else if _, err := c.RoundTrip(au); err != nil {
					errs <- err
				}
			}
		})
	}
	// Garbage: random SCRAM and PLAIN messages, and unauthenticated
	// Produce requests; each connection must be refused and closed.
	for i := range 200 {
		wg.Go(func() {
			c, err := kafkawire.Dial(k.Addr, "garbage", 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if i%4 == 0 {
				prod := kmsg.NewPtrProduceRequest()
				prod.Version, prod.Acks, prod.TimeoutMillis = 9, -1, 1000
				if _, err := c.Send(prod); err == nil {
					if err := c.ExpectClosed(10 * time.Second); err != nil {
						errs <- err
					}
				}
				return
			}
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}[i%3]
			junk := make([]byte, 1+i%300)
			rand.Read(junk)
			au := kmsg.NewPtrSASLAuthenticateRequest()
			au.Version, au.SASLAuthBytes = 2, junk
			if _, err := c.RoundTrip(hs); err != nil {
				errs <- err
				return
			}
			r, err := c.RoundTrip(au)
			if err != nil {
				errs <- err
				return
			}
			if r.(*kmsg.SASLAuthenticateResponse).ErrorCode != 58 {
				errs <- err
				return
			}
			md := kmsg.NewPtrMetadataRequest()
			if _, err := c.Send(md); err == nil {
				if err := c.ExpectClosed(10 * time.Second); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("hostile client: %v", err)
	}
	// Hold the dawdlers while the good producer makes 300 more produces
	// (about 2 s at its pace); p.check below judges each of them.
	acked := p.acked()
	waitFor(t, 30*time.Second, "300 more good produces with the dawdlers held", func() bool { return p.acked() >= acked+300 })
	m1 := k.metrics(t)
	to := time.Now()
	p.check(t, sched, from, to)
	if open := m1.open(); open < idle {
		t.Errorf("%v connections open, want the %d dawdlers held", open, idle)
	}
	if os.Getenv(engineEnv) == "" || os.Getenv(engineEnv) == "epoll" {
		// The epoll engine holds no goroutine per connection; nor may SASL.
		if d := m1["go_goroutines"] - m0["go_goroutines"]; d > 50 {
			t.Errorf("goroutines grew by %v with %d unauthenticated connections", d, idle)
		}
	}
	if f := m1[`kiggy_sasl_authentications_total{mechanism="PLAIN",outcome="failure"}`] +
		m1[`kiggy_sasl_authentications_total{mechanism="SCRAM-SHA-256",outcome="failure"}`] +
		m1[`kiggy_sasl_authentications_total{mechanism="SCRAM-SHA-512",outcome="failure"}`]; f < 150 {
		t.Errorf("%v failed authentications counted, want 150", f)
	}
	if u := m1[`kiggy_sasl_connections_closed_total{reason="unexpected_request"}`]; u < 50 {
		t.Errorf("%v unauthenticated Produce closes counted, want 50", u)
	}
	t.Logf("%v open, goroutines %v → %v, good producer acked %d", m1.open(), m0["go_goroutines"], m1["go_goroutines"], p.acked())
}

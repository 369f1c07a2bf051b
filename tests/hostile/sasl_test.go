//go:build linux

package hostile

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/security/sasl"
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

// TestFailedAuthenticationFlood guesses passwords: 16 clients, each in a
// loop for 3 s, connect to a SASL_PLAINTEXT listener and try PLAIN with a
// wrong password for a user whose password is kept as a PBKDF2 hash (4096
// iterations, SCRAM's minimum), beside the steady producer and consumer on
// the PLAINTEXT listener. kiggy runs at its default
// --connection-failed-authentication-delay (Kafka's
// connection.failed.authentication.delay.ms, 100 ms): every attempt must be
// answered SASL_AUTHENTICATION_FAILED, no sooner than the delay after it was
// sent (so no connection makes more than ten a second), and counted once;
// afterwards no connection is left waiting. KIGGY_HOSTILE_NO_QUOTA=1 runs the
// flood with the delay off, for comparison.
func TestFailedAuthenticationFlood(t *testing.T) {
	const (
		clients = 16
		lasting = 3 * time.Second
	)
	delay := bridge.DefaultFailedAuthenticationDelay
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("good:"+sasl.HashPassword("right", 4096)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--sasl-plain-users-file", users}
	if os.Getenv(noQuotaEnv) == "1" {
		t.Logf("no failed authentication delay (%s=1)", noQuotaEnv)
		delay = 0
		args = append(args, "--connection-failed-authentication-delay", "0")
	}
	k := startFloodKiggy(t, args...)
	addr := k.Listeners["SASL_PLAINTEXT"]
	s := startSteady(t, k) // on the PLAINTEXT listener
	m0 := k.metrics(t)
	before := k.rss(t)
	peak := k.peak(t)
	var attempts, early atomic.Int64
	var took time.Duration
	s.flood(func() {
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for time.Since(start) < lasting {
					c, err := kafkawire.Dial(addr, "guesser", 10*time.Second)
					if err != nil {
						t.Errorf("dial: %v", err)
						return
					}
					hs := kmsg.NewPtrSASLHandshakeRequest()
					hs.Version, hs.Mechanism = 1, sasl.Plain
					au := kmsg.NewPtrSASLAuthenticateRequest()
					au.Version, au.SASLAuthBytes = 2, []byte("\x00good\x00wrong")
					if _, err := c.RoundTrip(hs); err != nil {
						t.Errorf("SaslHandshake: %v", err)
						c.Close()
						return
					}
					sent := time.Now()
					r, err := c.RoundTrip(au)
					answered := time.Since(sent)
					if err != nil {
						t.Errorf("SaslAuthenticate with a wrong password: %v", err)
					} else if code := r.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != 58 {
						t.Errorf("SaslAuthenticate with a wrong password answered %d, want 58", code)
					} else if err := c.ExpectClosed(10 * time.Second); err != nil {
						t.Errorf("after the failure: %v", err)
					}
					c.Close()
					attempts.Add(1)
					if answered < delay {
						early.Add(1)
					}
				}
			})
		}
		wg.Wait()
		took = time.Since(start)
	})
	if t.Failed() {
		t.FailNow()
	}
	high := peak()
	n := attempts.Load()
	if e := early.Load(); e > 0 {
		t.Errorf("%d of %d failed authentications answered sooner than the %v delay", e, n, delay)
	}
	if delay > 0 {
		// Each client's attempts take the delay at least: no more than this.
		if most := int64(clients) * (int64(took/delay) + 1); n > most {
			t.Errorf("%d attempts by %d clients in %v, want at most %d with a %v delay", n, clients, took, most, delay)
		}
	}
	var m metrics
	if !poll(10*time.Second, func() bool {
		m = k.metrics(t)
		return m["kiggy_sasl_failed_authentications_delayed"] == 0
	}) {
		t.Errorf("%v connections still waiting out the delay after the flood", m["kiggy_sasl_failed_authentications_delayed"])
	}
	failed := `kiggy_sasl_authentications_total{mechanism="PLAIN",outcome="failure"}`
	if got := m[failed] - m0[failed]; got != float64(n) {
		t.Errorf("%v failed PLAIN authentications counted, want the %d attempts", got, n)
	}
	t.Logf("%d wrong passwords by %d clients in %v (%.0f a second; delay %v); RSS %.1f MiB before, peak %.1f MiB",
		n, clients, took.Round(time.Millisecond), float64(n)/took.Seconds(), delay, mib(before), mib(high))
	if grew := high - before; grew >= 32<<20 {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < 32", mib(grew))
	}
	s.check(t)
}

// TestUnauthenticatedFrameFlood sends big frames before authenticating:
// 200 connections to a SASL_PLAINTEXT listener each declare a 100 MiB
// request (kiggy's --max-frame-size) and send its first MiB, beside the
// steady producer and consumer on the PLAINTEXT listener.
// --sasl-server-max-receive-size (Kafka's sasl.server.max.receive.size,
// 512 KiB) closes each at its size prefix, counted as frame_too_large, so
// kiggy holds none of those bytes: its RSS grows by less than 32 MiB
// (without the bound it would buffer each connection's MiB as it arrives,
// 200 MiB).
func TestUnauthenticatedFrameFlood(t *testing.T) {
	const (
		conns = 200
		sent  = 1 << 20
	)
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("good:pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := startFloodKiggy(t, "--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"--sasl-plain-users-file", users)
	addr := k.Listeners["SASL_PLAINTEXT"]
	s := startSteady(t, k) // on the PLAINTEXT listener
	m0 := k.metrics(t)
	before := k.rss(t)
	peak := k.peak(t)
	var closed atomic.Int64
	s.flood(func() {
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				defer c.Close()
				b := make([]byte, 4+sent)
				binary.BigEndian.PutUint32(b, maxFrameSize)
				c.SetDeadline(time.Now().Add(20 * time.Second))
				_, _ = c.Write(b) // the server may close before all of it is written
				if _, err := c.Read(b[:1]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					closed.Add(1)
				}
			})
		}
		wg.Wait()
	})
	high := peak()
	m := k.metrics(t)
	counted := m.closed("frame_too_large") - m0.closed("frame_too_large")
	t.Logf("%d connections declared %d MiB and sent 1 MiB before authenticating: %d closed, %v counted as frame_too_large; RSS %.1f MiB before, peak %.1f MiB",
		conns, maxFrameSize>>20, closed.Load(), counted, mib(before), mib(high))
	if closed.Load() != conns || counted != conns {
		t.Errorf("%d of %d connections closed, %v counted as frame_too_large: want all", closed.Load(), conns, counted)
	}
	if grew := high - before; grew >= 32<<20 {
		t.Errorf("RSS grew by %.1f MiB over the flood, want < 32", mib(grew))
	}
	s.check(t)
}

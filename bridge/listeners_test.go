package bridge_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/security"
)

// TestAdvertisedListeners: Metadata, DescribeCluster and FindCoordinator
// give a connection its listener's advertised address; an empty host or
// port 0 in it is the one the client reached (docs/design/security.md §4).
// The test gateway's listener is unnamed ("").
func TestAdvertisedListeners(t *testing.T) {
	for _, c := range []struct {
		name string
		adv  bridge.AdvertisedAddr
		host string // "" = the reached host
		port int32  // 0 = the reached port
	}{
		{"host-and-port", bridge.AdvertisedAddr{Host: "kafka.example", Port: 19092}, "kafka.example", 19092},
		{"host-only", bridge.AdvertisedAddr{Host: "kafka.example"}, "kafka.example", 0},
		{"port-only", bridge.AdvertisedAddr{Port: 19093}, "", 19093},
	} {
		t.Run(c.name, func(t *testing.T) {
			gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
				AdvertisedHost:      "global.example", // the per-listener entry wins
				AdvertisedPort:      1,
				AdvertisedListeners: map[string]bridge.AdvertisedAddr{"": c.adv},
			}})
			rh, rp, _ := net.SplitHostPort(gw.Addr)
			wantHost, wantPort := c.host, c.port
			if wantHost == "" {
				wantHost = rh
			}
			if wantPort == 0 {
				n, _ := strconv.Atoi(rp)
				wantPort = int32(n)
			}
			bc := dialBench(t, gw.Addr)
			ask := func(req kmsg.Request, resp kmsg.Response) {
				t.Helper()
				req.SetVersion(req.MaxVersion())
				resp.SetVersion(req.GetVersion())
				body := bc.roundTrip(t, requestFrame(req, 1))
				if err := resp.ReadFrom(body[5:]); err != nil { // correlation id + header tags
					t.Fatalf("%T: %v", resp, err)
				}
			}
			md := kmsg.NewPtrMetadataResponse()
			ask(kmsg.NewPtrMetadataRequest(), md)
			if len(md.Brokers) != 1 || md.Brokers[0].Host != wantHost || md.Brokers[0].Port != wantPort {
				t.Errorf("Metadata brokers %+v, want %s:%d", md.Brokers, wantHost, wantPort)
			}
			dc := kmsg.NewPtrDescribeClusterResponse()
			ask(kmsg.NewPtrDescribeClusterRequest(), dc)
			if len(dc.Brokers) != 1 || dc.Brokers[0].Host != wantHost || dc.Brokers[0].Port != wantPort {
				t.Errorf("DescribeCluster brokers %+v, want %s:%d", dc.Brokers, wantHost, wantPort)
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKeys = []string{"g"}
			fr := kmsg.NewPtrFindCoordinatorResponse()
			ask(fc, fr)
			if len(fr.Coordinators) != 1 || fr.Coordinators[0].Host != wantHost || fr.Coordinators[0].Port != wantPort {
				t.Errorf("FindCoordinator %+v, want %s:%d", fr.Coordinators, wantHost, wantPort)
			}
		})
	}
}

// TestCertPrincipalOnlyOnSSL: the certificate's principal is taken on an
// SSL listener, once per connection, and never on SASL_SSL (SASL decides
// there, as in Kafka) or on a plaintext listener (docs/design/security.md
// §5).
func TestCertPrincipalOnlyOnSSL(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	srv := ca.Server(t, dir, "server")
	cli := ca.Client(t, dir, "client", pkix.Name{CommonName: "client"})
	var mu sync.Mutex
	calls := map[string]int{}
	store := memlog.New(memlog.Config{})
	s, err := bridge.NewServer("", engine.Config{}, bridge.Config{
		Listeners: map[string]security.Protocol{"PLAINTEXT": security.Plaintext, "SSL": security.SSL, "SASL_SSL": security.SASLSSL},
		CertPrincipal: func(st *tls.ConnectionState) security.Principal {
			mu.Lock()
			calls[st.PeerCertificates[0].Subject.CommonName]++
			mu.Unlock()
			return security.User("client")
		},
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
	scfg := &tls.Config{Certificates: []tls.Certificate{srv.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	ccfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{cli.TLS}}
	for _, name := range []string{"PLAINTEXT", "SASL_SSL", "SSL"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := &engine.Listener{Listener: ln, Name: name}
		var c net.Conn
		if name != "PLAINTEXT" {
			l.TLS = scfg
		}
		go s.Serve(l)
		if l.TLS != nil {
			c, err = tls.Dial("tcp", ln.Addr().String(), ccfg)
		} else {
			c, err = net.Dial("tcp", ln.Addr().String())
		}
		if err != nil {
			t.Fatal(err)
		}
		bc := &benchConn{c: c, br: bufio.NewReader(c)}
		reqs := int32(3)
		if name == "SASL_SSL" {
			// Before SASL only one ApiVersions is served; a second closes
			// the connection, as in Kafka (docs/design/security.md §7).
			reqs = 1
		}
		for corr := range reqs {
			bc.roundTrip(t, requestFrame(kmsg.NewPtrApiVersionsRequest(), corr))
		}
		c.Close()
		mu.Lock()
		n := calls["client"]
		mu.Unlock()
		if want := map[string]int{"PLAINTEXT": 0, "SASL_SSL": 0, "SSL": 1}[name]; n != want {
			t.Errorf("after %d requests on %s: CertPrincipal called %d times in all, want %d", reqs, name, n, want)
		}
	}
}

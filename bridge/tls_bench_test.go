package bridge_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"github.com/kiggy-io/kiggy/security"
)

// BenchmarkGatewayProduceTLS: BenchmarkGatewayProduce's request (16
// partitions × 16 × 1 KiB) over a PLAINTEXT and an SSL listener of one
// gateway, side by side (docs/BENCHMARKS.md, TLS). The SSL listener runs
// TLS 1.3 with AES-128-GCM on the net engine's goroutines whatever the
// engine (engine.Listener); the client's encryption runs on the same
// machine.
func BenchmarkGatewayProduceTLS(b *testing.B) {
	dir := b.TempDir()
	ca := testcerts.NewCA(b, dir, "ca")
	srvCert := ca.Server(b, dir, "server")
	backend := memlog.New(memlog.Config{PartitionBytes: 64 << 20})
	s, err := bridge.NewServer(os.Getenv("KIGGY_TEST_ENGINE"), engine.Config{}, bridge.Config{
		Listeners: map[string]security.Protocol{"PLAINTEXT": security.Plaintext, "SSL": security.SSL},
	}, backend)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		_ = backend.Close()
	})
	if _, err := backend.CreateTopic(context.Background(), "bench", benchPartitions, store.TopicConfig{}); err != nil {
		b.Fatal(err)
	}
	listen := func(name string, cfg *tls.Config) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go s.Serve(&engine.Listener{Listener: ln, Name: name, TLS: cfg})
		return ln.Addr().String()
	}
	plain := listen("PLAINTEXT", nil)
	secure := listen("SSL", &tls.Config{Certificates: []tls.Certificate{srvCert.TLS}})
	for _, c := range []struct {
		name string
		dial func() net.Conn
	}{
		{"listener=PLAINTEXT", func() net.Conn {
			c, err := net.Dial("tcp", plain)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
		{"listener=SSL", func() net.Conn {
			c, err := tls.Dial("tcp", secure, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn := c.dial()
			defer conn.Close()
			bc := &benchConn{c: conn, br: bufio.NewReaderSize(conn, 1<<20)}
			frame := produceFrame("bench")
			checkProduce(b, bc.roundTrip(b, frame))
			b.SetBytes(benchPartitions * benchRecords * benchValue)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				bc.roundTrip(b, frame)
			}
		})
	}
}

// Package kiggytest starts an in-process kiggy gateway on a loopback port for
// tests: the real engine, handlers and backend (the embedded log, or the Iggy
// client against an in-process iggytest server), so stock Kafka clients can
// connect to it over TCP.
package kiggytest

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// Options configures a test gateway. The zero value means an embedded-log
// gateway with Kafka-like defaults.
type Options struct {
	// ListenAddr is the Kafka listener's address ("" = an ephemeral port on
	// 127.0.0.1): a restarted gateway given its predecessor's Addr is found
	// by clients bootstrapped from it.
	ListenAddr string
	// Iggy runs the gateway on the Iggy backend instead of the embedded
	// log: against a real iggy-server process (a fresh one per gateway)
	// when one is found (internal/testing/iggyserver), against the in-process
	// iggytest model otherwise or when KIGGY_TEST_IGGY=model.
	// KIGGY_TEST_BACKEND=iggy does the same for a whole suite.
	Iggy bool
	// IggyModel keeps an Iggy-backend gateway on the iggytest model even
	// where a real server is found: for tests of what a real server cannot
	// be made to do on demand (lost replies, injected statuses), which use
	// Gateway.Iggy.
	IggyModel bool
	// NoAutoCreate turns off Metadata auto-creation of topics.
	NoAutoCreate bool
	// DefaultPartitions is the partition count of auto-created topics (0 = 1).
	DefaultPartitions int32
	// Engine selects the network engine ("" = default, "epoll", "net").
	Engine string
	// Bridge, when set, is used as the gateway configuration (its
	// NoAutoCreateTopics and DefaultPartitions are overridden by the
	// fields above when those are set).
	Bridge bridge.Config
	// EngineConfig, when set, configures the engine.
	EngineConfig engine.Config
	// IggyServer, when set, is the iggytest server to connect to (Iggy
	// mode), so a test can restart the gateway over the same data.
	IggyServer *iggytest.Server
	// IggyNode, when set, is the real iggy-server to connect to (Iggy
	// mode), so a test can restart the gateway over the same data.
	IggyNode *iggyserver.Node
	// IggyCluster, when set, is an iggytest cluster to connect to with
	// every node as a seed (Iggy mode); Gateway.Iggy is then nil.
	IggyCluster *iggytest.Cluster
	// IggyDurability is the Iggy client's durability level (Iggy mode;
	// DurabilityDefault = written, as kiggy's --iggy-durability default).
	IggyDurability store.Durability
	// IggyReadCacheBytes is the Iggy client's read cache bound (Iggy mode;
	// 0 = the client's default, negative = off).
	IggyReadCacheBytes int64
	// IggyFetchCacheBytes bounds the gateway's shared Fetch batches over
	// the Iggy client (iggy.Config.FetchCacheBytes: 0 = default, negative
	// = off).
	IggyFetchCacheBytes int64
	// IggyTailWindowBytes bounds the Iggy client's tail window
	// (iggy.Config.TailWindowBytes: 0 = default, negative = off).
	IggyTailWindowBytes int64
	// IggySoleWriter is iggy.Config.SoleWriter: nothing but this gateway
	// appends to its topics.
	IggySoleWriter bool
	// IggyNoKeepAlive turns the Iggy client's keep-alive loop off
	// (iggy.Config.PingInterval < 0): it connects the pool's idle sessions
	// and pings them in the background, whose allocations an allocation
	// test of one request would count. Sessions then connect on first use.
	IggyNoKeepAlive bool
	// Memlog configures the embedded log (when the backend is not Iggy).
	Memlog memlog.Config
	// Log, when set, is the backend (an embedded log kept from an earlier
	// gateway, so a test can restart the gateway over the same data). It
	// wins over Iggy and IggyServer.
	Log store.Log
	// Embedded keeps the gateway on the embedded log even when
	// KIGGY_TEST_BACKEND=iggy (tests of memlog-specific behaviour, such as
	// its allocation counts).
	Embedded bool
}

// Header is one Kafka record header as read back; a nil Value is null.
type Header struct {
	Key   string
	Value []byte
}

// Record is a Kafka record as read back from the gateway's log through the
// record mapping: nil Key/Value mean null, non-nil empty means empty.
type Record struct {
	Offset    int64
	Timestamp int64 // ms
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Gateway is a running test gateway.
type Gateway struct {
	// Addr is the host:port Kafka clients bootstrap from.
	Addr string
	// Log is the gateway's backend.
	Log store.Log
	// Iggy is the in-process iggytest server when the gateway runs on the
	// model (nil otherwise); tests stop and restart it to inject faults.
	Iggy *iggytest.Server
	// IggyNode is the real iggy-server when the gateway runs on one (nil
	// otherwise).
	IggyNode *iggyserver.Node

	srv      engine.Server
	gw       *bridge.Gateway
	stop     func()
	iggyAddr string // the model's address while StopIggy has it stopped
}

// Start starts a gateway and stops it when t ends.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	cfg := opts.Bridge
	if opts.NoAutoCreate {
		cfg.NoAutoCreateTopics = true
	}
	if opts.DefaultPartitions > 0 {
		cfg.DefaultPartitions = opts.DefaultPartitions
	}
	var backend store.Log
	var iggySrv *iggytest.Server
	var node *iggyserver.Node
	switch {
	case opts.Log != nil:
		backend = opts.Log
	case opts.IggyCluster != nil:
		backend = dialIggy(t, strings.Join(opts.IggyCluster.Addrs(), ","), &opts)
	case opts.IggyServer != nil:
		backend, iggySrv = connectIggy(t, opts.IggyServer, &opts), opts.IggyServer
	case opts.IggyNode != nil:
		backend, node = dialIggy(t, opts.IggyNode.Addr, &opts), opts.IggyNode
	case opts.Iggy || !opts.Embedded && os.Getenv("KIGGY_TEST_BACKEND") == "iggy":
		if opts.IggyModel || !RealIggy(t) {
			backend, iggySrv = startIggy(t, &opts)
		} else {
			node = iggyserver.StartT(t)
			backend = dialIggy(t, node.Addr, &opts)
		}
	default:
		backend = memlog.New(opts.Memlog)
	}
	g := &Gateway{Log: backend, Iggy: iggySrv, IggyNode: node}
	kind := opts.Engine
	if kind == "" {
		// KIGGY_TEST_ENGINE runs a whole suite on one engine ("epoll", "net").
		kind = os.Getenv("KIGGY_TEST_ENGINE")
	}
	// The wiring cmd/kiggy uses.
	s, err := bridge.NewServer(kind, opts.EngineConfig, cfg, backend)
	if err != nil {
		t.Fatalf("kiggytest: engine: %v", err)
	}
	g.gw, g.srv = s.Gateway, s.Engine
	srv := s.Engine
	listen := opts.ListenAddr
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("kiggytest: listen: %v", err)
	}
	g.Addr = ln.Addr().String()
	done := make(chan error, 1)
	var serve net.Listener = ln
	if cfg.Listeners[""].SASL() {
		// As cmd/kiggy bounds a SASL listener's frames before
		// authentication (Kafka's sasl.server.max.receive.size).
		serve = &engine.Listener{Listener: ln, MaxFrameBeforeAuth: bridge.DefaultSASLServerMaxReceiveSize}
	}
	go func() { done <- srv.Serve(serve) }()
	var once sync.Once
	g.stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Errorf("kiggytest: engine did not stop")
			}
			g.gw.Close()
			_ = backend.Close()
		})
	}
	t.Cleanup(g.stop)
	return g
}

// Stop drains and stops the gateway (and closes its backend client) before
// the test ends, as a restart would; the iggytest server keeps running.
func (g *Gateway) Stop() { g.stop() }

// Metrics returns the gateway's metrics in Prometheus text format.
func (g *Gateway) Metrics() string {
	var b strings.Builder
	g.gw.WriteMetrics(&b)
	return b.String()
}

// EngineStats returns the network engine's counters (connections closed by
// reason, ...).
func (g *Gateway) EngineStats() engine.Stats { return g.srv.Stats() }

// CreateTopic creates a topic directly in the backend.
func (g *Gateway) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	if _, err := g.Log.CreateTopic(context.Background(), name, partitions, store.TopicConfig{}); err != nil && !errors.Is(err, store.ErrTopicExists) {
		t.Fatalf("kiggytest: create topic %q: %v", name, err)
	}
}

// Records reads every record of one partition back from the log, mapped back
// to Kafka form (transaction markers, which are not records, skipped).
func (g *Gateway) Records(t testing.TB, topic string, partition int32) []Record {
	t.Helper()
	var out []Record
	var dec mapping.Decoder
	next := int64(0)
	for {
		n := 0
		var derr error
		wm, err := g.Log.Read(context.Background(), topic, partition, next, 4<<20, func(m *message.Message) bool {
			var r mapping.Record
			if derr = dec.Decode(m, &r); derr != nil {
				return false
			}
			next = m.Offset + 1
			n++
			if r.IsControl {
				return true // a transaction marker is not a record
			}
			rec := Record{Offset: m.Offset, Timestamp: r.TimestampMs, Key: clone(r.Key), Value: clone(r.Value)}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, Header{Key: string(h.Key), Value: clone(h.Value)})
			}
			out = append(out, rec)
			return true
		})
		if err != nil {
			t.Fatalf("kiggytest: read %s/%d: %v", topic, partition, err)
		}
		if derr != nil {
			t.Fatalf("kiggytest: decode %s/%d at %d: %v", topic, partition, next, derr)
		}
		if n == 0 || next >= wm.High {
			return out
		}
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// OnIggy reports whether the gateway runs on the Iggy backend (the model or
// a real server) rather than the embedded log.
func (g *Gateway) OnIggy() bool { return g.Iggy != nil || g.IggyNode != nil }

// SameIggy returns opts set to connect to the Iggy server g runs on (model
// or real), so a test can start another gateway over the same data.
func (g *Gateway) SameIggy(opts Options) Options {
	opts.IggyServer, opts.IggyNode = g.Iggy, g.IggyNode
	return opts
}

// IggyAddr is the address of the Iggy server g runs on ("" on the embedded
// log or a cluster).
func (g *Gateway) IggyAddr() string {
	switch {
	case g.IggyNode != nil:
		return g.IggyNode.Addr
	case g.Iggy != nil && g.Iggy.Addr() != nil:
		return g.Iggy.Addr().String()
	}
	return ""
}

// StopIggy stops the Iggy server the gateway runs on, as an outage: the
// model closes its listener, a real server gets SIGTERM.
func (g *Gateway) StopIggy(t testing.TB) {
	t.Helper()
	switch {
	case g.IggyNode != nil:
		g.IggyNode.Stop()
	case g.Iggy != nil:
		g.iggyAddr = g.Iggy.Addr().String()
		g.Iggy.Stop()
	default:
		t.Fatal("kiggytest: StopIggy on a gateway that is not on Iggy")
	}
}

// StartIggy starts the server StopIggy stopped again, on the same address
// and over the same data.
func (g *Gateway) StartIggy(t testing.TB) {
	t.Helper()
	var err error
	switch {
	case g.IggyNode != nil:
		err = g.IggyNode.Restart()
	case g.Iggy != nil:
		_, err = g.Iggy.Start(g.iggyAddr)
	}
	if err != nil {
		t.Fatalf("kiggytest: restart Iggy: %v", err)
	}
}

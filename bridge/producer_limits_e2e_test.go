package bridge_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// switchProxy forwards every connection it accepts to its current target;
// switching closes the connections made so far, as a restart of the
// gateway behind one address would.
type switchProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  []net.Conn
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *switchProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *switchProxy) switchTo(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.closeAll()
}

// TestProducerIDsAcrossGateways: a stock idempotent franz-go producer
// whose id another gateway issued (another --instance-id, another log; the
// client sees one address, as across a replacement of the gateway) is not
// refused, since the stock clients never ask for a new id after
// UNKNOWN_PRODUCER_ID (they bump the epoch locally and keep the id): every
// record is acknowledged and stored once. A batch from an id no kiggy
// issued is refused with UNKNOWN_PRODUCER_ID and a log start offset of 0
// (the Java client retries a -1 as is), creates no state, and is counted.
func TestProducerIDsAcrossGateways(t *testing.T) {
	proxy := newSwitchProxy(t, "")
	host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	portN, _ := strconv.Atoi(port)
	cfg := func(instance uint16) kiggytest.Options {
		return kiggytest.Options{Log: memlog.New(memlog.Config{}), Bridge: bridge.Config{InstanceID: instance,
			RefuseUnissuedProducerIDs: true, AdvertisedHost: host, AdvertisedPort: int32(portN)}}
	}
	a := kiggytest.Start(t, cfg(1))
	b := kiggytest.Start(t, cfg(2))
	a.CreateTopic(t, "issued", 1)
	b.CreateTopic(t, "issued", 1)
	proxy.switchTo(a.Addr)
	// Two embedded logs, so "issued" has another topic id on each: the
	// client stays on Produce v12, which names it (gateways over one Iggy
	// stream agree on ids, docs/design/record-mapping.md §8).
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(proxy.ln.Addr().String()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("issued"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0, 20)
	proxy.switchTo(b.Addr)
	produce(20, 40)
	wantCount(t, a, "issued", 0, 20)
	wantCount(t, b, "issued", 0, 20)
	for i, r := range b.Records(t, "issued", 0) {
		if want := fmt.Sprintf("r%d", 20+i); string(r.Value) != want {
			t.Fatalf("record %d at b is %s, want %s", i, r.Value, want)
		}
	}

	rc := dialRaw(t, b.Addr)
	corr := rc.send(produceReqTo("issued", 0, idemBatch(7, 0, 0, 1)))
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	rc.recv(corr, resp)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 59 || p.LogStartOffset != 0 || p.BaseOffset != -1 {
		t.Fatalf("never-issued id 7: code %d, log start %d, base %d; want 59, 0, -1", p.ErrorCode, p.LogStartOffset, p.BaseOffset)
	}
	wantCount(t, b, "issued", 0, 20)
	m := b.Metrics()
	for _, want := range []string{
		`kiggy_producer_ids_refused_total{reason="never_issued"} 1`,
		`kiggy_api_errors_total{api="Produce",code="UNKNOWN_PRODUCER_ID"} 1`,
		"kiggy_idempotent_producers 1",
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %s:\n%s", want, grepLines(m, "refused", "UNKNOWN_PRODUCER", "idempotent_producers"))
		}
	}
}

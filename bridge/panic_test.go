package bridge_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// faultLog is the embedded log with injected panics, by topic:
//   - "boom": every Append panics;
//   - "boom1": Append and Read of partition 1 panic (on the Iggy-style
//     fan-out that is a goroutine of its own);
//   - "wake": Read panics once the partition holds data (a parked Fetch
//     panics when an append wakes it);
//   - "block": Append waits for unblock (to keep every worker busy);
//   - "blockboom": Append waits for unblock, then panics if the batch holds
//     more than one message (a coalesced round of one-record batches).
type faultLog struct {
	store.Log
	entered chan struct{} // a "block" Append started
	unblock chan struct{}
	caps    store.Capabilities
}

// Capabilities implements store.CapabilityDeclarer: the embedded log's
// (inline serving) or none (the Iggy-style worker and fan-out paths).
func (l *faultLog) Capabilities() store.Capabilities { return l.caps }

// embedded are the embedded log's capabilities.
var embedded = memlog.New(memlog.Config{}).Capabilities()

func (l *faultLog) Append(ctx context.Context, topic string, p int32, b *message.Batch) (int64, error) {
	switch {
	case topic == "boom", topic == "boom1" && p == 1:
		panic("injected Append panic")
	case topic == "block":
		l.entered <- struct{}{}
		<-l.unblock
	case topic == "blockboom":
		l.entered <- struct{}{}
		<-l.unblock
		if b.Count > 1 {
			panic("injected Append panic")
		}
	}
	return l.Log.Append(ctx, topic, p, b)
}

func (l *faultLog) Read(ctx context.Context, topic string, p int32, offset int64, maxBytes int, fn func(*message.Message) bool) (store.Watermarks, error) {
	switch topic {
	case "boom1":
		if p == 1 {
			panic("injected Read panic")
		}
	case "wake":
		if wm, _ := l.Log.Watermarks(ctx, topic, p); wm.High > 0 {
			panic("injected Read panic")
		}
	}
	return l.Log.Read(ctx, topic, p, offset, maxBytes, fn)
}

// panicHarness is a gateway over a faultLog on a real socket, with a client
// producing to topic "ok" all along.
type panicHarness struct {
	t     *testing.T
	addr  string
	gw    *bridge.Gateway
	store *faultLog
	logs  *testtools.SyncBuffer

	// pipelines: the backend has round trips, so a Produce behind a
	// Produce starts once the first has queued its appends (pipeline.go).
	pipelines bool

	stop     chan struct{}
	done     chan struct{}
	produced atomic.Int64
	err      atomic.Value // error of the background producer
}

func startPanicHarness(t *testing.T, caps store.Capabilities, cfg bridge.Config) *panicHarness {
	h := &panicHarness{t: t, logs: new(testtools.SyncBuffer), stop: make(chan struct{}), done: make(chan struct{}), pipelines: !caps.LocalLatency}
	h.store = &faultLog{Log: memlog.New(memlog.Config{}), entered: make(chan struct{}, 4), unblock: make(chan struct{}), caps: caps}
	for name, n := range map[string]int32{"ok": 1, "after": 1, "boom": 1, "boom1": 2, "wake": 1, "block": 1, "blockboom": 1} {
		if _, err := h.store.CreateTopic(context.Background(), name, n, store.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	h.gw = bridge.New(cfg, h.store)
	srv, err := engine.New(os.Getenv("KIGGY_TEST_ENGINE"), engine.Config{Logger: slog.New(slog.DiscardHandler)}, h.gw)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		h.gw.Close()
	})
	go h.keepProducing()
	h.waitProduced(1)
	return h
}

// keepProducing produces one record at a time to "ok" over its own
// connection until stop, recording the first failure.
func (h *panicHarness) keepProducing() {
	defer close(h.done)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.err.Store(err)
		return
	}
	defer c.Close()
	rd := make([]byte, 0, 256)
	for corr := int32(1); ; corr++ {
		select {
		case <-h.stop:
			return
		default:
		}
		req := produceRequestTo("ok", batchOf(batch.NoCompression, "ok"))
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(frameRequest(req, corr)); err != nil {
			h.err.Store(fmt.Errorf("produce %d: write: %w", corr, err))
			return
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			h.err.Store(fmt.Errorf("produce %d: read: %w", corr, err))
			return
		}
		rd = append(rd[:0], make([]byte, binary.BigEndian.Uint32(size[:]))...)
		if _, err := io.ReadFull(c, rd); err != nil {
			h.err.Store(fmt.Errorf("produce %d: read: %w", corr, err))
			return
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = req.Version
		if err := resp.ReadFrom(rd[5:]); err != nil { // correlation id, header tags
			h.err.Store(fmt.Errorf("produce %d: decode: %w", corr, err))
			return
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			h.err.Store(fmt.Errorf("produce %d: error code %d", corr, code))
			return
		}
		h.produced.Add(1)
	}
}

func (h *panicHarness) waitProduced(n int64) {
	h.t.Helper()
	if !testtools.Eventually(10*time.Second, func() bool {
		err, _ := h.err.Load().(error)
		return err != nil || h.produced.Load() >= n
	}) {
		h.t.Fatalf("the other client produced %d records, want %d", h.produced.Load(), n)
	}
	if err, _ := h.err.Load().(error); err != nil {
		h.t.Fatalf("the other client failed: %v", err)
	}
}

// finish checks the outcome of one injected panic: the panicking connection
// is closed, the request queued behind it was not served, the panic was
// counted under api and logged once with its stack, and the other client
// kept producing all along and still does.
func (h *panicHarness) finish(rc *rawConn, api string) {
	h.t.Helper()
	if !rc.closed() {
		h.t.Fatal("the connection whose handler panicked is still open")
	}
	before := h.produced.Load()
	h.waitProduced(before + 3)
	close(h.stop)
	<-h.done
	if err, _ := h.err.Load().(error); err != nil {
		h.t.Fatalf("the other client failed: %v", err)
	}
	// The request behind the panic is never answered: its connection is
	// closed (above). Unless the backend pipelines Produce requests, it is
	// not served either; where it does, the Produce behind the panicking
	// Produce may have started, and its records, unacknowledged, may be
	// stored, as those of any request whose connection drops.
	if wm, err := h.store.Watermarks(context.Background(), "after", 0); err != nil || (wm.High != 0 && !(h.pipelines && api == "Produce")) {
		h.t.Errorf("the request queued behind the panic was served: %+v, %v", wm, err)
	}
	var m strings.Builder
	h.gw.WriteMetrics(&m)
	if want := fmt.Sprintf("kiggy_handler_panics_total{api=%q} 1\n", api); !strings.Contains(m.String(), want) {
		h.t.Errorf("metrics lack %q:\n%s", want, m.String())
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "handler panicked"); n != 1 {
		h.t.Errorf("%d panic log lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "stack=") || !strings.Contains(logs, "injected") {
		h.t.Errorf("the panic log lacks the panic or its stack:\n%s", logs)
	}
	// A new connection is served as before.
	rc2 := dialRaw(h.t, h.addr)
	if codes := produceCodes(rc2, produceRequestTo("ok", batchOf(batch.NoCompression, "again"))); codes[0] != 0 {
		h.t.Errorf("produce after the panic: code %d", codes[0])
	}
}

func batchOf(codec batch.Codec, value string) []byte {
	var b batch.Builder
	b.Reset(nil, 0, 1_700_000_000_000, codec)
	b.Append(0, 0, nil, []byte(value))
	return b.Finish()
}

// produceRequestTo is an acks=-1 Produce v9 of one batch per partition, in order.
func produceRequestTo(topic string, parts ...[]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	for i, p := range parts {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = int32(i), p
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// frameRequest is req's size-prefixed frame with header v1/v2.
func frameRequest(req kmsg.Request, corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func fetchOf(topic string, maxWait int32, partitions ...int32) *kmsg.FetchRequest {
	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 12, maxWait, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	for _, p := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fr.Topics = append(fr.Topics, ft)
	return fr
}

// sendPipelined sends an ApiVersions, bad, and a Produce to "after" at once,
// and reads the ApiVersions response: the requests before a panic are
// answered, the ones after it dropped.
func sendPipelined(rc *rawConn, bad kmsg.Request) {
	rc.t.Helper()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	corr := rc.send(av)
	rc.send(bad)
	rc.send(produceRequestTo("after", batchOf(batch.NoCompression, "after")))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	rc.recv(corr, resp)
}

// TestHandlerPanicClosesOnlyItsConnection injects a panic into handler code
// on every kind of goroutine that runs it, while another client produces over
// its own socket: each time only the panicking connection closes, the
// requests pipelined behind it are dropped, the panic is logged and counted
// once, and the gateway keeps serving.
func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	t.Run("inline", func(t *testing.T) {
		h := startPanicHarness(t, embedded, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, produceRequestTo("boom", batchOf(batch.NoCompression, "x")))
		h.finish(rc, "Produce")
	})
	t.Run("offloaded", func(t *testing.T) {
		// A compressed batch starts inline and moves to a worker.
		h := startPanicHarness(t, embedded, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, produceRequestTo("boom", batchOf(batch.Gzip, "x")))
		h.finish(rc, "Produce")
	})
	t.Run("worker", func(t *testing.T) {
		h := startPanicHarness(t, store.Capabilities{}, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, produceRequestTo("boom", batchOf(batch.NoCompression, "x")))
		h.finish(rc, "Produce")
	})
	t.Run("overflow", func(t *testing.T) {
		h := startPanicHarness(t, store.Capabilities{}, bridge.Config{Workers: 1, WorkQueueLen: -1})
		// Keep the one worker busy: every other request overflows.
		blocker := dialRaw(t, h.addr)
		corr := blocker.send(produceRequestTo("block", batchOf(batch.NoCompression, "b")))
		<-h.store.entered
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, produceRequestTo("boom", batchOf(batch.NoCompression, "x")))
		if !rc.closed() {
			t.Fatal("the connection whose handler panicked is still open")
		}
		close(h.store.unblock)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		blocker.recv(corr, resp)
		h.finish(rc, "Produce")
	})
	t.Run("parked-fetch-wakeup", func(t *testing.T) {
		h := startPanicHarness(t, embedded, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, fetchOf("wake", 10_000, 0))
		var m strings.Builder
		if !testtools.Eventually(10*time.Second, func() bool {
			m.Reset()
			h.gw.WriteMetrics(&m)
			return strings.Contains(m.String(), "kiggy_fetches_parked 1")
		}) {
			t.Fatalf("the Fetch did not park:\n%s", m.String())
		}
		waker := dialRaw(t, h.addr)
		if codes := produceCodes(waker, produceRequestTo("wake", batchOf(batch.NoCompression, "w"))); codes[0] != 0 {
			t.Fatalf("waking produce: code %d", codes[0])
		}
		h.finish(rc, "Fetch")
	})
	t.Run("produce-fanout", func(t *testing.T) {
		h := startPanicHarness(t, store.Capabilities{}, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, produceRequestTo("boom1", batchOf(batch.NoCompression, "p0"), batchOf(batch.NoCompression, "p1")))
		h.finish(rc, "Produce")
	})
	t.Run("produce-round", func(t *testing.T) {
		// Two appends queue behind a running one and share the next round;
		// its append panics: the round's leader's connection closes and
		// the other member is answered UNKNOWN_SERVER_ERROR, not left
		// waiting.
		h := startPanicHarness(t, store.Capabilities{}, bridge.Config{})
		first, leader, member := dialRaw(t, h.addr), dialRaw(t, h.addr), dialRaw(t, h.addr)
		c1 := first.send(produceRequestTo("blockboom", batchOf(batch.NoCompression, "1")))
		<-h.store.entered
		queued := func(n int) func() bool {
			return func() bool { return bridge.QueuedAppends(h.gw, "blockboom", 0) == n }
		}
		leader.send(produceRequestTo("blockboom", batchOf(batch.NoCompression, "2")))
		testtools.WaitFor(t, 10*time.Second, `"2" queued behind "1"`, queued(1))
		c3 := member.send(produceRequestTo("blockboom", batchOf(batch.NoCompression, "3")))
		testtools.WaitFor(t, 10*time.Second, `"3" queued behind "2"`, queued(2))
		h.store.unblock <- struct{}{} // "1" is stored alone
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		first.recv(c1, resp)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("the first append: code %d", code)
		}
		<-h.store.entered
		h.store.unblock <- struct{}{} // "2" and "3" as one batch: it panics
		got := make(chan int16, 1)
		go func() {
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 9
			if err := member.Recv(c3, resp); err != nil {
				got <- 0
				return
			}
			got <- resp.Topics[0].Partitions[0].ErrorCode
		}()
		select {
		case code := <-got:
			if code == 0 {
				t.Skip("the appends did not queue behind the first in time: each went alone")
			}
			if code != -1 {
				t.Fatalf("the member of the panicking round: code %d, want -1 (UNKNOWN_SERVER_ERROR)", code)
			}
		case <-h.store.entered:
			h.store.unblock <- struct{}{}
			t.Skip("the appends did not queue behind the first in time: each went alone")
		case <-time.After(10 * time.Second):
			t.Fatal("the member of the panicking round was never answered")
		}
		h.finish(leader, "Produce")
	})
	t.Run("fetch-fanout", func(t *testing.T) {
		h := startPanicHarness(t, store.Capabilities{}, bridge.Config{})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, fetchOf("boom1", 0, 0, 1))
		h.finish(rc, "Fetch")
	})
	t.Run("join-callback", func(t *testing.T) {
		// The first rebalance completes on the coordinator's timer.
		bridge.SetTestPanicHook(func(site string) {
			if site == "join" {
				panic("injected JoinGroup callback panic")
			}
		})
		defer bridge.SetTestPanicHook(nil)
		h := startPanicHarness(t, embedded, bridge.Config{Group: group.Config{InitialRebalanceDelay: 20 * time.Millisecond}})
		rc := dialRaw(t, h.addr)
		sendPipelined(rc, joinReq(""))
		h.finish(rc, "JoinGroup")
	})
	t.Run("sync-callback", func(t *testing.T) {
		// A lone leader's SyncGroup completes on its own request.
		h := startPanicHarness(t, embedded, bridge.Config{Group: group.Config{InitialRebalanceDelay: -1}})
		rc := dialRaw(t, h.addr)
		corr := rc.send(joinReq(""))
		jr := kmsg.NewPtrJoinGroupResponse()
		jr.Version = 3
		rc.recv(corr, jr)
		if jr.ErrorCode != 0 {
			t.Fatalf("JoinGroup: code %d", jr.ErrorCode)
		}
		bridge.SetTestPanicHook(func(site string) {
			if site == "sync" {
				panic("injected SyncGroup callback panic")
			}
		})
		defer bridge.SetTestPanicHook(nil)
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Version, sr.Group, sr.Generation, sr.MemberID = 3, "g", jr.Generation, jr.MemberID
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = jr.MemberID, []byte{0}
		sr.GroupAssignment = append(sr.GroupAssignment, a)
		sendPipelined(rc, sr)
		h.finish(rc, "SyncGroup")
	})
}

func joinReq(member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID, req.ProtocolType = 3, "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0}
	req.Protocols = append(req.Protocols, p)
	return req
}

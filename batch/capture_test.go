package batch_test

// Real-client captures (see fuzz/README.md).
//
// A tiny fake broker speaks just enough Kafka (ApiVersions, Metadata,
// InitProducerId, Produce with error 0) for producers to send it Produce
// requests, which it keeps as raw frames. TestClientCaptures drives franz-go
// and sarama in process, and kcat when installed, for every codec, and checks
// that each batch validates and iterates to exactly the records produced.
// With KIGGY_CAPTURE=1 it also (re)writes batch/testdata/captures/<client>-<codec>.bin.
// TestCaptureServe (KIGGY_CAPTURE_LISTEN=host:port) serves external clients
// such as the Java console producer and writes KIGGY_CAPTURE_NAME.bin.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/fuzz"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// fakeBroker is a single-node Kafka look-alike that accepts Produce requests
// and records them. It is test scaffolding, built on kmsg, not kiggy's codec.
type fakeBroker struct {
	ln   net.Listener
	host string
	port int32

	mu     sync.Mutex
	frames [][]byte // Produce request frames, without size prefix
	offset int64
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// advertised are the ranges the fake broker announces. Produce min 0, Fetch
// 4–12 and FindCoordinator 0 keep librdkafka < 2.11.1 willing to compress
// (docs/design/kafka-protocol.md §2.1, §5); Fetch and FindCoordinator are never served.
var advertised = []kmsg.ApiVersionsResponseApiKey{
	{ApiKey: 0, MinVersion: 0, MaxVersion: 12}, // Produce (13 needs topic ids)
	{ApiKey: 1, MinVersion: 4, MaxVersion: 12}, // Fetch
	{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
	{ApiKey: 10, MinVersion: 0, MaxVersion: 3}, // FindCoordinator
	{ApiKey: 18, MinVersion: 0, MaxVersion: 4}, // ApiVersions
	{ApiKey: 22, MinVersion: 0, MaxVersion: 5}, // InitProducerId
}

func startFakeBroker(tb testing.TB, addr string) *fakeBroker {
	tb.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	ta := ln.Addr().(*net.TCPAddr)
	b := &fakeBroker{ln: ln, host: ta.IP.String(), port: int32(ta.Port), conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	tb.Cleanup(b.Close)
	return b
}

func (b *fakeBroker) Addr() string { return b.ln.Addr().String() }

func (b *fakeBroker) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.ln.Close()
	b.wg.Wait()
}

// Frames returns the Produce request frames received so far.
func (b *fakeBroker) Frames() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.frames...)
}

func (b *fakeBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(c)
	}
}

func (b *fakeBroker) serve(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		resp, ok := b.handle(frame)
		if !ok {
			return
		}
		if resp == nil {
			continue // acks=0
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// handle answers one request; ok=false closes the connection, as Kafka does
// for requests it does not serve.
func (b *fakeBroker) handle(frame []byte) (resp []byte, ok bool) {
	h, body, err := fuzz.ParseRequest(frame)
	if err != nil {
		return nil, false
	}
	if h.Key == 18 && h.Version > 4 {
		// KIP-511: answer a too-new ApiVersions with a v0 body, error 35
		// and our ApiVersions range.
		r := kmsg.NewPtrApiVersionsResponse()
		r.Version = 0
		r.ErrorCode = 35
		r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
		return encodeResponse(h, r), true
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return nil, false
	}
	req.SetVersion(h.Version)
	if err := req.ReadFrom(body); err != nil {
		return nil, false
	}
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		out := kmsg.NewPtrApiVersionsResponse()
		out.Version = h.Version
		out.ApiKeys = advertised
		return encodeResponse(h, out), true
	case *kmsg.MetadataRequest:
		out := kmsg.NewPtrMetadataResponse()
		out.Version = h.Version
		out.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: b.host, Port: b.port}}
		cluster := "kiggy-capture"
		out.ClusterID = &cluster
		out.ControllerID = 1
		names := []string{fuzz.CaptureTopic}
		if len(r.Topics) > 0 {
			names = names[:0]
			for _, t := range r.Topics {
				if t.Topic != nil {
					names = append(names, *t.Topic)
				}
			}
		}
		for _, name := range names {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic = kmsg.StringPtr(name)
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Leader, p.Replicas, p.ISR = 0, 1, []int32{1}, []int32{1}
			t.Partitions = []kmsg.MetadataResponseTopicPartition{p}
			out.Topics = append(out.Topics, t)
		}
		return encodeResponse(h, out), true
	case *kmsg.InitProducerIDRequest:
		out := kmsg.NewPtrInitProducerIDResponse()
		out.Version = h.Version
		out.ProducerID, out.ProducerEpoch = 1000, 0
		return encodeResponse(h, out), true
	case *kmsg.ProduceRequest:
		out := kmsg.NewPtrProduceResponse()
		out.Version = h.Version
		b.mu.Lock()
		b.frames = append(b.frames, frame)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.BaseOffset = b.offset
				if len(p.Records) >= batch.HeaderSize {
					b.offset += int64(binary.BigEndian.Uint32(p.Records[57:]))
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
		b.mu.Unlock()
		if r.Acks == 0 {
			return nil, true
		}
		return encodeResponse(h, out), true
	}
	return nil, false
}

// encodeResponse frames a response: size, correlation id, the response
// header's tag byte for flexible versions (never for ApiVersions, KIP-511),
// and the body.
func encodeResponse(h fuzz.RequestHeader, r kmsg.Response) []byte {
	out := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(out[4:], uint32(h.CorrelationID))
	if r.IsFlexible() && h.Key != 18 {
		out = append(out, 0)
	}
	out = r.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

var captureCodecs = []batch.Codec{batch.NoCompression, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}

func produceFranz(ctx context.Context, addr string, codec batch.Codec) error {
	cc := map[batch.Codec]kgo.CompressionCodec{
		batch.NoCompression: kgo.NoCompression(), batch.Gzip: kgo.GzipCompression(),
		batch.Snappy: kgo.SnappyCompression(), batch.LZ4: kgo.Lz4Compression(), batch.Zstd: kgo.ZstdCompression(),
	}[codec]
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(fuzz.CaptureTopic),
		kgo.ProducerBatchCompression(cc),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(20*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, e := range fuzz.GoClientRecords() {
		r := &kgo.Record{Key: e.Key, Value: e.Value, Partition: 0}
		for _, h := range e.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, r)
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func produceSarama(_ context.Context, addr string, codec batch.Codec) error {
	cfg := sarama.NewConfig()
	cfg.ClientID = "kiggy-capture"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = map[batch.Codec]sarama.CompressionCodec{
		batch.NoCompression: sarama.CompressionNone, batch.Gzip: sarama.CompressionGZIP,
		batch.Snappy: sarama.CompressionSnappy, batch.LZ4: sarama.CompressionLZ4, batch.Zstd: sarama.CompressionZSTD,
	}[codec]
	cfg.Metadata.Retry.Backoff = 10 * time.Millisecond
	cfg.Producer.Flush.Frequency = 20 * time.Millisecond
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return err
	}
	var msgs []*sarama.ProducerMessage
	for _, e := range fuzz.GoClientRecords() {
		m := &sarama.ProducerMessage{Topic: fuzz.CaptureTopic, Partition: 0}
		if e.Key != nil {
			m.Key = sarama.ByteEncoder(e.Key)
		}
		if e.Value != nil {
			m.Value = sarama.ByteEncoder(e.Value)
		}
		for _, h := range e.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs = append(msgs, m)
	}
	err = p.SendMessages(msgs)
	return errors.Join(err, p.Close())
}

func produceKcat(ctx context.Context, kcat, addr string, codec batch.Codec) error {
	args := []string{"-P", "-b", addr, "-t", fuzz.CaptureTopic, "-p", "0", "-K", "\t",
		"-X", "linger.ms=20", "-X", "api.version.request=true"}
	if codec != batch.NoCompression {
		args = append(args, "-z", codec.String())
	}
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(strings.Join(fuzz.KcatLines(), "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kcat: %w: %s", err, out)
	}
	return nil
}

// decodeAll validates and iterates every batch, returning the records.
func decodeAll(tb testing.TB, batches [][]byte) []fuzz.ExpectedRecord {
	tb.Helper()
	d := batch.AcquireDecoder()
	defer batch.ReleaseDecoder(d)
	var got []fuzz.ExpectedRecord
	for i, b := range batches {
		h, err := batch.Validate(b)
		if err != nil {
			tb.Fatalf("batch %d: Validate: %v", i, err)
		}
		if err := h.CheckProduce(); err != nil {
			tb.Fatalf("batch %d: CheckProduce: %v", i, err)
		}
		budget := batch.Budget{MaxBytes: 8 << 20, MaxRecords: 1 << 20}
		recs, err := d.Records(b, h, &budget)
		if err != nil {
			tb.Fatalf("batch %d (%v): Records: %v", i, h.Codec(), err)
		}
		var r batch.Record
		var n int
		for recs.Next(&r) {
			if r.OffsetDelta != int32(n) {
				tb.Errorf("batch %d record %d: offsetDelta %d", i, n, r.OffsetDelta)
			}
			if ts := h.BaseTimestamp + r.TimestampDelta; ts < 1500000000000 || ts > h.MaxTimestamp {
				tb.Errorf("batch %d record %d: timestamp %d outside [2017, max %d]", i, n, ts, h.MaxTimestamp)
			}
			e := fuzz.ExpectedRecord{Key: clone(r.Key), Value: clone(r.Value)}
			for k, v, ok := r.Headers.Next(); ok; k, v, ok = r.Headers.Next() {
				e.Headers = append(e.Headers, fuzz.Header{Key: string(k), Value: clone(v)})
			}
			got = append(got, e)
			n++
		}
		if err := recs.Err(); err != nil {
			tb.Fatalf("batch %d (%v): iterate: %v", i, h.Codec(), err)
		}
		if n != int(h.NumRecords) {
			tb.Fatalf("batch %d: %d records, header says %d", i, n, h.NumRecords)
		}
	}
	return got
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// expectedFor returns the records a capture of client must hold: the Go
// record set for the Go clients, KcatLines for every line-fed client (kcat,
// java, ...). lenient treats a null value as equal to an empty one, since
// line-based tools differ there.
func expectedFor(client string) (want []fuzz.ExpectedRecord, lenient bool) {
	switch client {
	case "franz-go", "sarama":
		return fuzz.GoClientRecords(), false
	}
	for _, l := range fuzz.KcatLines() {
		k, v, _ := strings.Cut(l, "\t")
		want = append(want, fuzz.ExpectedRecord{Key: []byte(k), Value: []byte(v)})
	}
	return want, true
}

func compareRecords(tb testing.TB, name string, got, want []fuzz.ExpectedRecord, lenient bool) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d records, want %d", name, len(got), len(want))
	}
	eq := func(a, b []byte) bool {
		if lenient {
			return bytes.Equal(a, b)
		}
		return (a == nil) == (b == nil) && bytes.Equal(a, b)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !eq(g.Key, w.Key) || !eq(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
			tb.Fatalf("%s record %d: got key %q (nil %v) value len %d (nil %v) %d headers; want key %q (nil %v) value len %d (nil %v) %d headers",
				name, i, g.Key, g.Key == nil, len(g.Value), g.Value == nil, len(g.Headers),
				w.Key, w.Key == nil, len(w.Value), w.Value == nil, len(w.Headers))
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !eq(g.Headers[j].Value, w.Headers[j].Value) {
				tb.Fatalf("%s record %d header %d: got %q=%q, want %q=%q", name, i, j,
					g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

// TestClientCaptures produces the capture record sets with real clients into
// the fake broker and checks every batch; KIGGY_CAPTURE=1 saves them.
func TestClientCaptures(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping real-client produce in -short mode")
	}
	save := os.Getenv("KIGGY_CAPTURE") == "1"
	type client struct {
		name    string
		produce func(ctx context.Context, addr string, codec batch.Codec) error
	}
	clients := []client{{"franz-go", produceFranz}, {"sarama", produceSarama}}
	if kcat, err := testtools.FindKcat(); err == nil {
		clients = append(clients, client{"kcat", func(ctx context.Context, addr string, codec batch.Codec) error {
			return produceKcat(ctx, kcat, addr, codec)
		}})
	} else {
		t.Logf("kcat not found, its captures are not re-made: %v", err)
	}
	for _, c := range clients {
		for _, codec := range captureCodecs {
			name := c.name + "-" + codec.String()
			t.Run(name, func(t *testing.T) {
				b := startFakeBroker(t, "127.0.0.1:0")
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := c.produce(ctx, b.Addr(), codec); err != nil {
					t.Fatal(err)
				}
				frames := b.Frames()
				var stream []byte
				var batches [][]byte
				for _, f := range frames {
					stream = fuzz.AppendFrame(stream, f)
					bs, err := fuzz.ProduceRecords(f)
					if err != nil {
						t.Fatal(err)
					}
					batches = append(batches, bs...)
				}
				checkCodecs(t, batches, codec.String())
				want, lenient := expectedFor(c.name)
				compareRecords(t, name, decodeAll(t, batches), want, lenient)
				if save {
					path := filepath.Join("testdata", "captures", name+".bin")
					if err := os.WriteFile(path, stream, 0o644); err != nil {
						t.Fatal(err)
					}
					t.Logf("wrote %s: %d Produce requests, %d batches, %d bytes", path, len(frames), len(batches), len(stream))
				}
			})
		}
	}
}

// TestCaptureServe runs the fake broker on KIGGY_CAPTURE_LISTEN for an
// external producer (e.g. the Java console producer) and writes the Produce
// requests it receives to testdata/captures/$KIGGY_CAPTURE_NAME.bin once
// KIGGY_CAPTURE_WAIT (default 60s) has passed or after KIGGY_CAPTURE_COUNT
// records (default len(KcatLines)) have arrived. KIGGY_CAPTURE_LINES, if set,
// names a file to write the KcatLines input to first. See fuzz/README.md.
func TestCaptureServe(t *testing.T) {
	addr := os.Getenv("KIGGY_CAPTURE_LISTEN")
	if addr == "" {
		t.Skip("set KIGGY_CAPTURE_LISTEN=127.0.0.1:port and KIGGY_CAPTURE_NAME=<client>-<codec> to capture an external client")
	}
	name := os.Getenv("KIGGY_CAPTURE_NAME")
	if name == "" || strings.ContainsAny(name, `/\`) {
		t.Fatal("KIGGY_CAPTURE_NAME must be <client>-<codec>")
	}
	if p := os.Getenv("KIGGY_CAPTURE_LINES"); p != "" {
		if err := os.WriteFile(p, []byte(strings.Join(fuzz.KcatLines(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wait := 60 * time.Second
	if s := os.Getenv("KIGGY_CAPTURE_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		wait = d
	}
	want := len(fuzz.KcatLines())
	if s := os.Getenv("KIGGY_CAPTURE_COUNT"); s != "" {
		if _, err := fmt.Sscan(s, &want); err != nil {
			t.Fatal(err)
		}
	}
	b := startFakeBroker(t, addr)
	t.Logf("fake broker on %s; waiting up to %v for %d records", b.Addr(), wait, want)
	testtools.Eventually(wait, func() bool { return b.offsetNow() >= int64(want) })
	// A final request may still land: wait until none has come for 200 ms.
	for n := len(b.Frames()); !testtools.Consistently(200*time.Millisecond, func() bool { return len(b.Frames()) == n }); n = len(b.Frames()) {
	}
	frames := b.Frames()
	if len(frames) == 0 {
		t.Fatal("no Produce request arrived")
	}
	var stream []byte
	var batches [][]byte
	for _, f := range frames {
		stream = fuzz.AppendFrame(stream, f)
		bs, err := fuzz.ProduceRecords(f)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, bs...)
	}
	got := decodeAll(t, batches)
	path := filepath.Join("testdata", "captures", name+".bin")
	if err := os.WriteFile(path, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d Produce requests, %d batches, %d records", path, len(frames), len(batches), len(got))
}

func (b *fakeBroker) offsetNow() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.offset
}

// TestCaptures checks every committed capture: each batch validates and
// iterates to exactly the records its client was asked to produce.
func TestCaptures(t *testing.T) {
	caps, err := fuzz.LoadCaptures(fuzz.CapturesDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) == 0 {
		t.Fatal("no captures in " + fuzz.CapturesDir())
	}
	for _, c := range caps {
		t.Run(c.Name, func(t *testing.T) {
			if len(c.Batches) == 0 {
				t.Fatal("capture holds no batches")
			}
			checkCodecs(t, c.Batches, c.Codec)
			want, lenient := expectedFor(c.Client)
			compareRecords(t, c.Name, decodeAll(t, c.Batches), want, lenient)
		})
	}
}

// checkCodecs checks that every batch validates and uses codec or none (a
// client may send a batch uncompressed when compression does not shrink it,
// as librdkafka does), and that at least one batch uses codec.
func checkCodecs(tb testing.TB, batches [][]byte, codec string) {
	tb.Helper()
	seen := false
	for i, b := range batches {
		h, err := batch.Validate(b)
		if err != nil {
			tb.Fatalf("batch %d: %v", i, err)
		}
		switch got := h.Codec().String(); got {
		case codec:
			seen = true
		case "none":
		default:
			tb.Errorf("batch %d: codec %s, want %s", i, got, codec)
		}
	}
	if !seen {
		tb.Errorf("no batch uses codec %s", codec)
	}
}

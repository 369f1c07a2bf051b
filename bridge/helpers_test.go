package bridge_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers that tests in several files of this package use.

// openIggyModel starts an in-process iggytest server and opens an Iggy
// client to it with cfg (its Addr, RequestTimeout and Logger filled in),
// both closed when the test ends: for tests that hand the client to a
// gateway themselves (kiggytest.Options.Log).
func openIggyModel(t *testing.T, cfg iggy.Config) *iggy.Client {
	srv := iggytest.New(iggytest.Config{})
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg.Addr, cfg.RequestTimeout, cfg.Logger = addr.String(), 5*time.Second, slog.New(slog.DiscardHandler)
	ic, err := iggy.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ic.Close() })
	return ic
}

// benchConn is a raw Kafka connection that writes frames and reads whole
// responses.
type benchConn struct {
	c   net.Conn
	br  *bufio.Reader
	rb  []byte
	hdr [4]byte // a field: a local array would escape through io.ReadFull
}

func dialBench(b testing.TB, addr string) *benchConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchConn{c: c, br: bufio.NewReaderSize(c, 1<<20)}
}

// roundTrip writes frame and returns the response body (after the size).
func (bc *benchConn) roundTrip(b testing.TB, frame []byte) []byte {
	if _, err := bc.c.Write(frame); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(bc.br, bc.hdr[:]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(bc.hdr[:]))
	if cap(bc.rb) < n {
		bc.rb = make([]byte, n)
	}
	bc.rb = bc.rb[:n]
	if _, err := io.ReadFull(bc.br, bc.rb); err != nil {
		b.Fatal(err)
	}
	return bc.rb
}

// requestFrame encodes req (kmsg, the codec oracle) as a frame
// (internal/testing/kafkawire).
func requestFrame(req kmsg.Request, corr int32) []byte {
	return kafkawire.AppendRequest(nil, req, corr, "bench")
}

// produceFrame is a Produce v9 (acks=all) of one uncompressed batch of
// benchRecords × benchValue bytes to each of benchPartitions partitions.
func produceFrame(topic string) []byte { return produceFrameAt(9, topic, [16]byte{}) }

// produceFrameAt is produceFrame at version v, the topic named by id from
// v13 on.
func produceFrameAt(v int16, topic string, id [16]byte) []byte {
	value := make([]byte, benchValue)
	for i := range value {
		value[i] = 'A' + byte(i%26)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	var bld batch.Builder
	for p := range int32(benchPartitions) {
		bld.Reset(nil, 0, time.Now().UnixMilli(), batch.NoCompression)
		for i := range int32(benchRecords) {
			bld.Append(i, 0, nil, value)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, bld.Finish()
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return requestFrame(req, 1)
}

func checkProduce(b testing.TB, body []byte) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	if err := resp.ReadFrom(body[5:]); err != nil { // correlation id + header tags
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
	}
}

// fetchRequest is a Fetch at version v of partitions 0..len(offsets)-1 of
// topic from offsets, up to partMax bytes each and maxBytes in all, MinBytes
// 1 and no wait.
func fetchRequest(v int16, topic string, offsets []int64, partMax, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = v, -1, 0, 1, maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, partMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchFrame is a Fetch v12 of every partition of topic from offset 0, up
// to partMax bytes each.
func fetchFrame(topic string, partMax int32) []byte {
	return requestFrame(fetchRequest(12, topic, make([]int64, benchPartitions), partMax, 64<<20), 2)
}

// rawConn speaks Kafka framing with kmsg-encoded requests
// (internal/testing/kafkawire), so each error row is provoked by a hand-built request
// over a real socket; any I/O or decoding failure fails the test.
type rawConn struct {
	t *testing.T
	*kafkawire.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	c, err := kafkawire.Dial(addr, "test", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c}
}

// send writes req (at its Version) and returns the correlation id.
func (rc *rawConn) send(req kmsg.Request) int32 {
	corr, err := rc.Send(req)
	if err != nil {
		rc.t.Fatalf("write: %v", err)
	}
	return corr
}

// recv reads one response into resp, checking the correlation id.
func (rc *rawConn) recv(corr int32, resp kmsg.Response) {
	rc.t.Helper()
	if err := rc.Recv(corr, resp); err != nil {
		rc.t.Fatal(err)
	}
}

// closed reports whether the server closed the connection.
func (rc *rawConn) closed() bool {
	rc.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rc.Reader().ReadByte()
	// A server that closes with request bytes still unread in its socket
	// (a pipelined request behind the one that closed it) makes the kernel
	// send RST instead of FIN: the read fails with ECONNRESET (a clean-clone
	// CI run saw it).
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// stillUsable checks the connection answers an ApiVersions afterwards.
func (rc *rawConn) stillUsable() {
	rc.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	corr := rc.send(req)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	rc.recv(corr, resp)
	if resp.ErrorCode != 0 {
		rc.t.Fatalf("ApiVersions after the error: code %d", resp.ErrorCode)
	}
}

func produceCodes(rc *rawConn, req *kmsg.ProduceRequest) []int16 {
	corr := rc.send(req)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = req.Version
	rc.recv(corr, resp)
	var codes []int16
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

// metricValue reads one unlabelled sample from Prometheus text.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in the metrics", name)
	return 0
}

func produceN(t *testing.T, addr, topic string, partitions int32, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)),
			Headers:   []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}},
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// createCodecTopic creates topic with compression.type compression: through
// CreateTopics when the gateway accepts the config, else straight in the
// backend (TopicConfig.Compression).
func createCodecTopic(t testing.TB, gw *kiggytest.Gateway, topic string, partitions int32, compression string) {
	t.Helper()
	if compression != "" {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, map[string]*string{"compression.type": &compression}, topic)
		if err == nil && resp.Err == nil {
			return
		}
	}
	if _, err := gw.Log.CreateTopic(context.Background(), topic, partitions, store.TopicConfig{Compression: compression}); err != nil {
		t.Fatal(err)
	}
}

// containsLine reports whether the metrics text has line exactly.
func containsLine(metrics, line string) bool {
	return strings.Contains("\n"+metrics, "\n"+line+"\n")
}

// gatewayOnSlowIggy starts a gateway on an iggytest server that answers
// every request latency late (a remote Iggy's round trip).
func gatewayOnSlowIggy(t *testing.T, latency time.Duration) *kiggytest.Gateway {
	t.Helper()
	srv := iggytest.New(iggytest.Config{Latency: latency})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
}

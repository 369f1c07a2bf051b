package nullbroker

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/wire"
)

func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s := New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// TestFranzGoProduce produces through franz-go with each acks setting and
// checks that every record is acknowledged with contiguous offsets per
// partition, as a log would assign them.
func TestFranzGoProduce(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks=all idempotent", nil},
		{"acks=1 5 in flight", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5)}},
		{"lz4", []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := start(t, Config{Partitions: 4})
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const n = 5000
			val := make([]byte, 100)
			recs := make([]*kgo.Record, n)
			for i := range recs {
				recs[i] = &kgo.Record{Value: val}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			seen := map[int32][]bool{}
			for _, r := range recs {
				if r.Partition < 0 || r.Partition >= 4 {
					t.Fatalf("record in partition %d", r.Partition)
				}
				if seen[r.Partition] == nil {
					seen[r.Partition] = make([]bool, n)
				}
				if r.Offset < 0 || r.Offset >= n || seen[r.Partition][r.Offset] {
					t.Fatalf("partition %d: offset %d out of range or repeated", r.Partition, r.Offset)
				}
				seen[r.Partition][r.Offset] = true
			}
			total := 0
			for p, offs := range seen {
				k := 0
				for k < n && offs[k] {
					k++
				}
				for j := k; j < n; j++ {
					if offs[j] {
						t.Fatalf("partition %d: offsets not contiguous from 0 (gap at %d)", p, k)
					}
				}
				total += k
			}
			if total != n {
				t.Fatalf("acknowledged %d offsets, want %d", total, n)
			}
			if st := s.Stats(); st.Records != n || st.BadRequests != 0 || st.ProduceRequests == 0 {
				t.Fatalf("stats %+v, want %d records and no bad requests", st, n)
			}
		})
	}
}

// TestAcksZero checks that acks=0 Produce gets no response: the next
// response on the connection must answer the next request.
func TestAcksZero(t *testing.T) {
	s, addr := start(t, Config{})
	c := dial(t, addr)
	produce := produceFrame(t, 1, 0, "t", 0, 3)
	writeFrame(t, c, produce)
	writeFrame(t, c, apiVersionsFrame(2, 3))
	corr, body := readFrame(t, c)
	if corr != 2 {
		t.Fatalf("first response has correlation id %d, want 2 (acks=0 must not be answered)", corr)
	}
	var r kmsg.ApiVersionsResponse
	r.Version = 3
	if err := r.ReadFrom(body); err != nil || r.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v, error %d", err, r.ErrorCode)
	}
	if st := s.Stats(); st.Records != 3 {
		t.Fatalf("records = %d, want 3", st.Records)
	}
}

// TestApiVersions checks the advertised set and the KIP-511 answer to a
// too-new version.
func TestApiVersions(t *testing.T) {
	_, addr := start(t, Config{})
	c := dial(t, addr)
	writeFrame(t, c, apiVersionsFrame(7, 3))
	corr, body := readFrame(t, c)
	var r kmsg.ApiVersionsResponse
	r.Version = 3
	if err := r.ReadFrom(body); err != nil || corr != 7 {
		t.Fatalf("corr %d err %v", corr, err)
	}
	got := map[int16]bool{}
	for _, k := range r.ApiKeys {
		got[k.ApiKey] = true
	}
	for _, k := range []wire.APIKey{wire.KeyProduce, wire.KeyMetadata, wire.KeyAPIVersions, wire.KeyInitProducerID} {
		if !got[int16(k)] {
			t.Errorf("ApiVersions lacks key %d", k)
		}
	}
	if len(r.ApiKeys) != 4 {
		t.Errorf("ApiVersions lists %d keys, want 4", len(r.ApiKeys))
	}

	// KIP-511: a version newer than ours is answered in the v0 format with
	// UNSUPPORTED_VERSION and our range, and the connection stays open.
	writeFrame(t, c, apiVersionsFrame(8, 99))
	corr, body = readFrame(t, c)
	var r0 kmsg.ApiVersionsResponse
	if err := r0.ReadFrom(body); err != nil || corr != 8 || r0.ErrorCode != int16(wire.UnsupportedVersion) {
		t.Fatalf("too-new ApiVersions: corr %d err %v code %d", corr, err, r0.ErrorCode)
	}
	writeFrame(t, c, apiVersionsFrame(9, 0))
	if corr, _ = readFrame(t, c); corr != 9 {
		t.Fatalf("after UNSUPPORTED_VERSION: corr %d", corr)
	}
}

// TestBadInputClosesOnlyThatConnection sends what the null broker does not
// serve and checks that the connection is closed and the server still
// answers others.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	s, addr := start(t, Config{})
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"fetch", frame(wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyFetch, APIVersion: 4, CorrelationID: 1}))},
		{"unknown key", frame(wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: 9999, APIVersion: 0, CorrelationID: 1}))},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff}},
		{"huge size", []byte{0x7f, 0xff, 0xff, 0xff}},
		{"short header", frame([]byte{0, 0})},
		{"produce v2", frame(wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyProduce, APIVersion: 2, CorrelationID: 1}))},
		{"truncated produce", frame(produceFrame(t, 1, -1, "t", 0, 1)[:30])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			if err := c.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			c.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := c.NetConn().Read(make([]byte, 1)); err == nil {
				t.Fatalf("read %d bytes, want the connection closed", n)
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("connection left open")
			}
			c2 := dial(t, addr)
			writeFrame(t, c2, apiVersionsFrame(5, 3))
			if corr, _ := readFrame(t, c2); corr != 5 {
				t.Fatalf("server stopped answering: corr %d", corr)
			}
		})
	}
	if s.Stats().BadRequests == 0 {
		t.Fatal("BadRequests not counted")
	}
}

// TestMetadataUnknownPartition checks partition bounds in Produce and the
// Metadata shape.
func TestMetadataUnknownPartition(t *testing.T) {
	_, addr := start(t, Config{Partitions: 2})
	c := dial(t, addr)
	req := kmsg.NewMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("m")
	req.Topics = append(req.Topics, rt)
	writeFrame(t, c, append(wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyMetadata, APIVersion: 12, CorrelationID: 3}), req.AppendTo(nil)...))
	_, body := readFrame(t, c)
	resp := kmsg.NewMetadataResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[1:]); err != nil { // skip response header v1 tags
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.ControllerID != NodeID || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata %+v", resp)
	}
	if b := resp.Brokers[0]; net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) != addr {
		t.Fatalf("broker %s:%d, want %s", b.Host, b.Port, addr)
	}

	writeFrame(t, c, produceFrame(t, 4, -1, "m", 2, 1))
	_, body = readFrame(t, c)
	pr := kmsg.NewProduceResponse()
	pr.Version = 9
	if err := pr.ReadFrom(body[1:]); err != nil {
		t.Fatal(err)
	}
	if got := pr.Topics[0].Partitions[0].ErrorCode; got != int16(wire.UnknownTopicOrPartition) {
		t.Fatalf("partition 2 of 2: error %d, want UNKNOWN_TOPIC_OR_PARTITION", got)
	}
}

func TestCountRecords(t *testing.T) {
	two := append(batch(3), batch(1)...)
	for _, tc := range []struct {
		name string
		in   []byte
		want int64
	}{
		{"nil", nil, 0},
		{"one", batch(5), 5},
		{"two", two, 4},
		{"truncated second", two[:len(two)-1], 3},
		{"short", batch(2)[:20], 0},
	} {
		if got := countRecords(tc.in); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// batch returns a record batch header claiming n records, followed by
// padding; only the fields countRecords reads are meaningful.
func batch(n int) []byte {
	b := make([]byte, 61+8)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:27], uint32(n-1))
	return b
}

func produceFrame(t testing.TB, corr int32, acks int16, topic string, partition int32, n int) []byte {
	t.Helper()
	req := wire.ProduceRequest{Acks: acks, TimeoutMillis: 1000, Topics: []wire.ProduceRequestTopic{{
		Name: topic, Partitions: []wire.ProduceRequestPartition{{Index: partition, Records: batch(n)}},
	}}}
	b := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyProduce, APIVersion: 9, CorrelationID: corr, ClientID: wire.NullStringOf("test")})
	return req.AppendTo(b, 9)
}

func apiVersionsFrame(corr int32, version int16) []byte {
	b := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.KeyAPIVersions, APIVersion: version, CorrelationID: corr, ClientID: wire.NullStringOf("test")})
	if version >= 3 {
		b = (&wire.APIVersionsRequest{ClientSoftwareName: "test", ClientSoftwareVersion: "1"}).AppendTo(b, version)
	}
	return b
}

func frame(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// dial connects the raw test client (internal/testing/kafkawire); frames are
// written by hand, to reach the null broker's own decoder.
func dial(t *testing.T, addr string) *kafkawire.Conn {
	t.Helper()
	c, err := kafkawire.Dial(addr, "nullbroker-test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeFrame(t *testing.T, c *kafkawire.Conn, b []byte) {
	t.Helper()
	if err := c.Write(frame(b)); err != nil {
		t.Fatal(err)
	}
}

// readFrame reads one response and returns its correlation id and what
// follows it (a v1 header's tag byte included).
func readFrame(t *testing.T, c *kafkawire.Conn) (int32, []byte) {
	t.Helper()
	b, err := c.ReadFrame(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgProduceRequest builds a varied request without unknown tags.
func (g *oracleGen) kmsgProduceRequest(v int16) *kmsg.ProduceRequest {
	k := kmsg.NewPtrProduceRequest()
	k.Version = v
	k.TransactionID = ptrOf(g.ns())
	k.Acks = []int16{-1, 0, 1, g.i16()}[g.r.IntN(4)]
	k.TimeoutMillis = g.i32()
	nt := g.n(true)
	for range nt {
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = g.str(), g.uuid()
		if v >= produceTopicIDs { // by id only
			t.Topic = ""
		} else {
			t.TopicID = [16]byte{}
		}
		for range g.n(nt < 10) {
			p := kmsg.NewProduceRequestTopicPartition()
			p.Partition = g.i32()
			p.Records = g.records()
			t.Partitions = append(t.Partitions, p)
		}
		k.Topics = append(k.Topics, t)
	}
	return k
}

// produceTags adds unknown tagged fields at every level of a flexible request.
func (g *oracleGen) produceTags(k *kmsg.ProduceRequest) {
	if k.Version < 9 {
		return
	}
	g.unknownTags(&k.UnknownTags)
	for i := range k.Topics {
		g.unknownTags(&k.Topics[i].UnknownTags)
		for j := range k.Topics[i].Partitions {
			g.unknownTags(&k.Topics[i].Partitions[j].UnknownTags)
		}
	}
}

// prodProduceRequestMatches reports how ours differs from k, or "".
func prodProduceRequestMatches(ours *ProduceRequest, k *kmsg.ProduceRequest) string {
	if ours.TransactionalID != nsOf(k.TransactionID) || ours.Acks != k.Acks || ours.TimeoutMillis != k.TimeoutMillis {
		return "top-level fields differ"
	}
	if len(ours.Topics) != len(k.Topics) {
		return "topic count differs"
	}
	for i := range ours.Topics {
		ot, kt := &ours.Topics[i], &k.Topics[i]
		if ot.Name != kt.Topic || ot.TopicID != kt.TopicID || len(ot.Partitions) != len(kt.Partitions) {
			return "topic differs"
		}
		for j := range ot.Partitions {
			op, kp := &ot.Partitions[j], &kt.Partitions[j]
			if op.Index != kp.Partition || !prodNullableBytesEqual(op.Records, kp.Records) {
				return "partition differs"
			}
		}
	}
	return ""
}

func TestProduceRequestOracle(t *testing.T) {
	g := newOracleGen(0)
	var ours ProduceRequest // reused: shrinking and growing requests must not leak state
	for v := int16(produceMinDecodeVersion); v <= produceMaxVersion; v++ {
		for range 60 {
			k := g.kmsgProduceRequest(v)
			plain := k.AppendTo(nil)
			g.produceTags(k)
			body := k.AppendTo(nil)
			if err := ours.Decode(body, v); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			if d := prodProduceRequestMatches(&ours, k); d != "" {
				t.Fatalf("v%d: %s: ours %+v kmsg %+v", v, d, ours, k)
			}
			if got := ours.AppendTo(nil, v); !bytes.Equal(got, plain) {
				t.Fatalf("v%d: AppendTo differs from kmsg (%d vs %d bytes)", v, len(got), len(plain))
			}
			if len(body) < 4096 {
				prodCheckPrefixes(t, body, func(b []byte) error { return new(ProduceRequest).Decode(b, v) })
			}
		}
	}
}

// TestProduceRequestRemovedVersions: v0–2 are advertised (KAFKA-18659) but
// not decodable, v14 is neither.
func TestProduceRequestRemovedVersions(t *testing.T) {
	g := newOracleGen(1)
	for _, v := range []int16{-1, 0, 1, 2, produceMaxVersion + 1} {
		k := g.kmsgProduceRequest(v)
		var r ProduceRequest
		if err := r.Decode(k.AppendTo(nil), v); !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("v%d: %v", v, err)
		}
	}
	// The header still parses v0 (the range advertised), so the handler
	// sees the key and version before closing the connection.
	h, _, err := ParseRequestHeader([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff})
	if err != nil || h.APIKey != KeyProduce || h.APIVersion != 0 {
		t.Fatalf("v0 header: %+v %v", h, err)
	}
}

func TestProduceRequestMalformed(t *testing.T) {
	var r ProduceRequest
	for _, tc := range []struct {
		name    string
		version int16
		body    []byte
		err     error
	}{
		{"null topics", 3, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, ErrNegativeLength},
		{"null topics compact", 9, []byte{0, 0, 1, 0, 0, 0, 0, 0, 0}, ErrNegativeLength},
		{"null partitions", 3, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff}, ErrNegativeLength},
		{"huge topic count", 3, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0}, ErrTooMany},
		{"huge compact count", 9, []byte{0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, ErrTooMany},
		{"records past end", 3, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1}, ErrShort},
		{"over-long varint", 9, []byte{0, 0, 1, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0}, ErrVarint},
		{"null topic name", 3, []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0}, ErrNegativeLength},
	} {
		// A good decode first, so that stale views would show.
		good := ProduceRequest{TransactionalID: NullStringOf("tx"), Acks: 1, Topics: []ProduceRequestTopic{{Name: "t"}}}
		if err := r.Decode(good.AppendTo(nil, tc.version), tc.version); err != nil {
			t.Fatal(err)
		}
		if err := r.Decode(tc.body, tc.version); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
		if len(r.Topics) != 0 || r.TransactionalID.Valid || r.Acks != 0 {
			t.Errorf("%s: state left after an error: %+v", tc.name, r)
		}
	}
}

// TestProduceRequestViews checks that names and records are views into the
// frame, bounded by full slice expressions.
func TestProduceRequestViews(t *testing.T) {
	in := ProduceRequest{TransactionalID: NullStringOf("tx"), Acks: -1, TimeoutMillis: 1500, Topics: []ProduceRequestTopic{
		{Name: "abc", Partitions: []ProduceRequestPartition{{Index: 0, Records: []byte{1, 2, 3}}, {Index: 1, Records: []byte{4}}}},
	}}
	for _, v := range []int16{3, 9, 12} {
		body := in.AppendTo(nil, v)
		var r ProduceRequest
		if err := r.Decode(body, v); err != nil {
			t.Fatal(err)
		}
		recs := r.Topics[0].Partitions[0].Records
		if cap(recs) != len(recs) {
			t.Fatalf("v%d: records cap %d > len %d: an append would overwrite the frame", v, cap(recs), len(recs))
		}
		for i := range body {
			body[i] ^= 0xff // what a reused read buffer does
		}
		if r.Topics[0].Name == "abc" || recs[0] == 1 || r.TransactionalID.S == "tx" {
			t.Fatalf("v%d: decoded fields are copies, not views", v)
		}
	}
}

func (g *oracleGen) produceResponse() *ProduceResponse {
	r := &ProduceResponse{ThrottleMillis: g.i32()}
	nt := g.n(true)
	for range nt {
		t := ProduceResponseTopic{Name: g.str(), TopicID: g.uuid()}
		for range g.n(nt < 10) {
			p := ProduceResponsePartition{
				Index: g.i32(), ErrorCode: ErrorCode(g.i16()), BaseOffset: g.i64(),
				LogAppendTimeMillis: g.i64(), LogStartOffset: g.i64(), ErrorMessage: g.ns(),
			}
			for range g.n(false) {
				p.RecordErrors = append(p.RecordErrors, ProduceRecordError{BatchIndex: g.i32(), BatchIndexErrorMessage: g.ns()})
			}
			if g.bool() {
				// kiggy hints only known leaders (id ≥ 0): a hint equal to
				// the default (-1, -1) would be one kmsg does not write.
				p.CurrentLeader = LeaderHint{Valid: true, LeaderID: g.i32() & 0x7fffffff, LeaderEpoch: g.i32()}
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	for range g.n(false) {
		r.NodeEndpoints = append(r.NodeEndpoints, NodeEndpoint{NodeID: g.i32(), Host: g.str(), Port: g.i32(), Rack: g.ns()})
	}
	return r
}

func prodCheckProduceResponse(t *testing.T, v int16, ours *ProduceResponse, k *kmsg.ProduceResponse) {
	t.Helper()
	fail := func(what string, got, want any) { t.Fatalf("v%d: %s: kmsg %+v, ours %+v", v, what, got, want) }
	wantThrottle := ours.ThrottleMillis
	if v < 1 {
		wantThrottle = 0
	}
	if k.ThrottleMillis != wantThrottle {
		fail("ThrottleMillis", k.ThrottleMillis, ours.ThrottleMillis)
	}
	wantEndpoints := ours.NodeEndpoints
	if v < 10 {
		wantEndpoints = nil // KIP-951 NodeEndpoints are v10+
	}
	if len(k.Brokers) != len(wantEndpoints) {
		fail("NodeEndpoints", k.Brokers, wantEndpoints)
	}
	for i, b := range k.Brokers {
		if e := wantEndpoints[i]; b.NodeID != e.NodeID || b.Host != e.Host || b.Port != e.Port || nsOf(b.Rack) != e.Rack {
			fail("node endpoint", b, e)
		}
	}
	if len(k.Topics) != len(ours.Topics) {
		fail("topic count", len(k.Topics), len(ours.Topics))
	}
	for i := range k.Topics {
		kt, ot := &k.Topics[i], &ours.Topics[i]
		wantName, wantID := ot.Name, ot.TopicID
		if v >= produceTopicIDs {
			wantName = "" // by id only from v13
		} else {
			wantID = [16]byte{}
		}
		if kt.Topic != wantName || kt.TopicID != wantID || len(kt.Partitions) != len(ot.Partitions) {
			fail("topic", kt, ot)
		}
		for j := range kt.Partitions {
			kp, op := &kt.Partitions[j], &ot.Partitions[j]
			want := *op
			if v < 2 {
				want.LogAppendTimeMillis = -1 // kmsg default when absent
			}
			if v < 5 {
				want.LogStartOffset = -1
			}
			if v < 8 {
				want.RecordErrors, want.ErrorMessage = nil, NullString{}
			}
			wantLeader := LeaderHint{LeaderID: -1, LeaderEpoch: -1} // kmsg's default when absent
			if v >= 10 && want.CurrentLeader.Valid {
				wantLeader = want.CurrentLeader
			}
			if kp.Partition != want.Index || ErrorCode(kp.ErrorCode) != want.ErrorCode || kp.BaseOffset != want.BaseOffset ||
				kp.LogAppendTime != want.LogAppendTimeMillis || kp.LogStartOffset != want.LogStartOffset ||
				nsOf(kp.ErrorMessage) != want.ErrorMessage || len(kp.ErrorRecords) != len(want.RecordErrors) ||
				kp.CurrentLeader.LeaderID != wantLeader.LeaderID || kp.CurrentLeader.LeaderEpoch != wantLeader.LeaderEpoch {
				fail("partition", kp, want)
			}
			for e := range kp.ErrorRecords {
				ke, oe := &kp.ErrorRecords[e], &want.RecordErrors[e]
				if ke.RelativeOffset != oe.BatchIndex || nsOf(ke.ErrorMessage) != oe.BatchIndexErrorMessage {
					fail("record error", ke, oe)
				}
			}
		}
	}
}

func TestProduceResponseOracle(t *testing.T) {
	g := newOracleGen(10)
	var buf []byte
	for v := int16(0); v <= produceMaxVersion; v++ {
		for range 40 {
			ours := g.produceResponse()
			buf = ours.AppendTo(buf[:0], v)
			k := kmsg.NewPtrProduceResponse()
			k.Version = v
			if err := k.ReadFrom(buf); err != nil {
				t.Fatalf("v%d: kmsg: %v", v, err)
			}
			prodCheckProduceResponse(t, v, ours, k)
			if again := k.AppendTo(nil); !bytes.Equal(again, buf) {
				t.Fatalf("v%d: kmsg re-encode differs (%d vs %d bytes)", v, len(again), len(buf))
			}
		}
	}
}

// TestProduceResponseThrottlePosition pins docs/design/kafka-protocol.md §8.6: in Produce, ThrottleTimeMs
// comes after the topic array.
func TestProduceResponseThrottlePosition(t *testing.T) {
	r := ProduceResponse{ThrottleMillis: 0x01020304}
	if got := r.AppendTo(nil, 8); !bytes.Equal(got, []byte{0, 0, 0, 0, 1, 2, 3, 4}) {
		t.Fatalf("v8: %x", got)
	}
	if got := r.AppendTo(nil, 9); !bytes.Equal(got, []byte{1, 1, 2, 3, 4, 0}) {
		t.Fatalf("v9: %x", got)
	}
}

func FuzzProduceRequest(f *testing.F) {
	g := newOracleGen(100)
	for v := int16(0); v <= produceMaxVersion+1; v++ {
		for range 3 {
			k := g.kmsgProduceRequest(v)
			g.produceTags(k)
			if b := k.AppendTo(nil); len(b) < 2048 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r ProduceRequest
		for v := int16(-1); v <= produceMaxVersion+1; v++ {
			err := r.Decode(body, v)
			if v < produceMinDecodeVersion || v > produceMaxVersion {
				if !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("v%d: %v", v, err)
				}
				continue
			}
			if err != nil {
				continue
			}
			k := kmsg.NewPtrProduceRequest()
			k.Version = v
			if err := k.ReadFrom(body); err != nil {
				t.Fatalf("v%d: kmsg rejects what we accept: %v", v, err)
			}
			if d := prodProduceRequestMatches(&r, k); d != "" {
				t.Fatalf("v%d: %s", v, d)
			}
			var again ProduceRequest
			if err := again.Decode(r.AppendTo(nil, v), v); err != nil {
				t.Fatalf("v%d: re-decode: %v", v, err)
			}
			if d := prodProduceRequestMatches(&again, k); d != "" {
				t.Fatalf("v%d: round trip: %s", v, d)
			}
		}
	})
}

// prodBenchProduceRequest is what a Java producer sends at linger: 2 topics ×
// 3 partitions × one 1 KiB batch, v12.
func prodBenchProduceRequest() (body []byte, version int16) {
	records := bytes.Repeat([]byte{0x5a}, 1024)
	r := ProduceRequest{Acks: -1, TimeoutMillis: 30000}
	for _, name := range []string{"orders", "payments"} {
		t := ProduceRequestTopic{Name: name}
		for p := range 3 {
			t.Partitions = append(t.Partitions, ProduceRequestPartition{Index: int32(p), Records: records})
		}
		r.Topics = append(r.Topics, t)
	}
	return r.AppendTo(nil, 12), 12
}

func BenchmarkProduceRequestDecode(b *testing.B) {
	body, v := prodBenchProduceRequest()
	var r ProduceRequest
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Decode(body, v); err != nil {
			b.Fatal(err)
		}
	}
}

func prodBenchProduceResponse() *ProduceResponse {
	r := &ProduceResponse{}
	for _, name := range []string{"orders", "payments"} {
		t := ProduceResponseTopic{Name: name}
		for p := range 3 {
			t.Partitions = append(t.Partitions, ProduceResponsePartition{Index: int32(p), BaseOffset: 1 << 40, LogAppendTimeMillis: -1})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func BenchmarkProduceResponseEncode(b *testing.B) {
	r := prodBenchProduceResponse()
	buf := r.AppendTo(nil, 12)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendTo(buf[:0], 12)
	}
}

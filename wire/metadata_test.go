package wire

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// prodMetadataRequestMatches reports how ours differs from what kmsg decoded
// (or encoded) at version v, or "" when they agree.
func prodMetadataRequestMatches(ours *MetadataRequest, k *kmsg.MetadataRequest, v int16) string {
	switch {
	case v == 0 && len(k.Topics) == 0:
		// "v0: empty array = all topics": normalized to nil.
		if ours.Topics != nil {
			return "v0 empty topics should decode as nil (all)"
		}
	case (k.Topics == nil) != (ours.Topics == nil):
		return "topics null-ness differs"
	case len(k.Topics) != len(ours.Topics):
		return "topic count differs"
	}
	for i := range ours.Topics {
		kt, ot := &k.Topics[i], &ours.Topics[i]
		want := MetadataRequestTopic{}
		if v >= 10 {
			want.TopicID = kt.TopicID
			want.Name = nsOf(kt.Topic)
		} else {
			want.Name = NullStringOf("")
			if kt.Topic != nil {
				want.Name = NullStringOf(*kt.Topic)
			}
		}
		if *ot != want {
			return "topic differs"
		}
	}
	if ours.AllowAutoTopicCreation != (k.AllowAutoTopicCreation || v < 4) {
		return "AllowAutoTopicCreation differs"
	}
	if ours.IncludeClusterAuthorizedOperations != (k.IncludeClusterAuthorizedOperations && v >= 8 && v <= 10) {
		return "IncludeClusterAuthorizedOperations differs"
	}
	if ours.IncludeTopicAuthorizedOperations != (k.IncludeTopicAuthorizedOperations && v >= 8) {
		return "IncludeTopicAuthorizedOperations differs"
	}
	return ""
}

func (g *oracleGen) kmsgMetadataRequest(v int16) *kmsg.MetadataRequest {
	k := kmsg.NewPtrMetadataRequest()
	k.Version = v
	switch g.r.IntN(4) {
	case 0: // nil: null (all topics) in v1+, empty in v0
	case 1:
		k.Topics = []kmsg.MetadataRequestTopic{}
	default:
		for range g.n(true) {
			t := kmsg.NewMetadataRequestTopic()
			if v >= 10 {
				t.TopicID = g.uuid()
				t.Topic = ptrOf(g.ns())
			} else {
				s := g.str()
				t.Topic = &s
			}
			if v >= 9 {
				g.unknownTags(&t.UnknownTags)
			}
			k.Topics = append(k.Topics, t)
		}
	}
	k.AllowAutoTopicCreation = g.r.IntN(2) == 0
	k.IncludeClusterAuthorizedOperations = g.r.IntN(2) == 0
	k.IncludeTopicAuthorizedOperations = g.r.IntN(2) == 0
	return k
}

func TestMetadataRequestOracle(t *testing.T) {
	g := newOracleGen(3)
	var ours MetadataRequest // reused across versions and cases
	for v := int16(metadataMinVersion); v <= metadataMaxVersion; v++ {
		for range 60 {
			k := g.kmsgMetadataRequest(v)
			plain := k.AppendTo(nil)
			if v >= 9 {
				g.unknownTags(&k.UnknownTags)
			}
			body := k.AppendTo(nil)
			if err := ours.Decode(body, v); err != nil {
				t.Fatalf("v%d: %v (%x)", v, err, body)
			}
			if d := prodMetadataRequestMatches(&ours, k, v); d != "" {
				t.Fatalf("v%d: %s: ours %+v kmsg %+v", v, d, ours, k)
			}
			if got := ours.AppendTo(nil, v); !bytes.Equal(got, plain) && !prodHasTopicTags(k) {
				t.Fatalf("v%d: AppendTo %x, kmsg %x", v, got, plain)
			}
			if len(body) < 4096 {
				metadataCheckPrefixes(t, body, v)
			}
		}
	}
}

func prodHasTopicTags(k *kmsg.MetadataRequest) bool {
	for i := range k.Topics {
		if k.Topics[i].UnknownTags.Len() > 0 {
			return true
		}
	}
	return false
}

func TestMetadataRequestNulls(t *testing.T) {
	var r MetadataRequest
	// v0: a null array is invalid ("nullableVersions": "1+").
	if err := r.Decode([]byte{0xff, 0xff, 0xff, 0xff}, 0); !errors.Is(err, ErrNegativeLength) {
		t.Fatalf("v0 null topics: %v", err)
	}
	// v1 null = all; v1 empty = none, and stays non-nil on a fresh struct.
	if err := r.Decode([]byte{0xff, 0xff, 0xff, 0xff}, 1); err != nil || r.Topics != nil {
		t.Fatalf("v1 null: %v %v", r.Topics, err)
	}
	if err := r.Decode([]byte{0, 0, 0, 0}, 1); err != nil || r.Topics == nil || len(r.Topics) != 0 {
		t.Fatalf("v1 empty: %#v %v", r.Topics, err)
	}
	// v9 compact: 0 = null, 1 = empty.
	if err := r.Decode([]byte{0, 1, 0, 0, 0}, 9); err != nil || r.Topics != nil || r.AllowAutoTopicCreation != true {
		t.Fatalf("v9 null: %+v %v", r, err)
	}
	if err := r.Decode([]byte{1, 0, 0, 0, 0}, 9); err != nil || r.Topics == nil || r.AllowAutoTopicCreation {
		t.Fatalf("v9 empty: %+v %v", r, err)
	}
	// Before v10 a topic name is not nullable.
	if err := r.Decode([]byte{0, 0, 0, 1, 0xff, 0xff}, 1); !errors.Is(err, ErrNegativeLength) {
		t.Fatalf("v1 null name: %v", err)
	}
	// A count that cannot fit in the bytes left fails before allocating.
	if err := r.Decode([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0}, 1); !errors.Is(err, ErrTooMany) {
		t.Fatalf("huge count: %v", err)
	}
	if err := r.Decode(nil, 14); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("v14: %v", err)
	}
}

func (g *oracleGen) metadataResponse() *MetadataResponse {
	r := &MetadataResponse{
		ThrottleMillis:              g.i32(),
		ClusterID:                   g.ns(),
		ControllerID:                g.i32(),
		ClusterAuthorizedOperations: g.i32(),
		ErrorCode:                   ErrorCode(g.i16()),
	}
	for range g.n(false) {
		r.Brokers = append(r.Brokers, MetadataResponseBroker{NodeID: g.i32(), Host: g.str(), Port: g.i32(), Rack: g.ns()})
	}
	nt := g.n(true)
	for range nt {
		t := MetadataResponseTopic{
			ErrorCode: ErrorCode(g.i16()), Name: g.ns(), TopicID: g.uuid(),
			IsInternal: g.r.IntN(2) == 0, TopicAuthorizedOperations: g.i32(),
		}
		for range g.n(nt < 10) {
			t.Partitions = append(t.Partitions, MetadataResponsePartition{
				ErrorCode: ErrorCode(g.i16()), PartitionIndex: g.i32(), LeaderID: g.i32(), LeaderEpoch: g.i32(),
				ReplicaNodes: g.int32s(), IsrNodes: g.int32s(), OfflineReplicas: g.int32s(),
			})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// prodCheckMetadataResponse compares what kmsg decoded at v with ours,
// field by field, for the fields v carries.
func prodCheckMetadataResponse(t *testing.T, v int16, ours *MetadataResponse, k *kmsg.MetadataResponse) {
	t.Helper()
	fail := func(what string, got, want any) { t.Fatalf("v%d: %s: kmsg %v, ours %v", v, what, got, want) }
	at := func(from int16, x, absent int32) int32 {
		if v >= from {
			return x
		}
		return absent
	}
	if k.ThrottleMillis != at(3, ours.ThrottleMillis, 0) {
		fail("ThrottleMillis", k.ThrottleMillis, ours.ThrottleMillis)
	}
	if len(k.Brokers) != len(ours.Brokers) {
		fail("broker count", len(k.Brokers), len(ours.Brokers))
	}
	for i, kb := range k.Brokers {
		ob := ours.Brokers[i]
		wantRack := ob.Rack
		if v < 1 {
			wantRack = NullString{}
		}
		if kb.NodeID != ob.NodeID || kb.Host != ob.Host || kb.Port != ob.Port || nsOf(kb.Rack) != wantRack {
			fail("broker", kb, ob)
		}
	}
	wantCluster := ours.ClusterID
	if v < 2 {
		wantCluster = NullString{}
	}
	if nsOf(k.ClusterID) != wantCluster {
		fail("ClusterID", k.ClusterID, ours.ClusterID)
	}
	if k.ControllerID != at(1, ours.ControllerID, -1) {
		fail("ControllerID", k.ControllerID, ours.ControllerID)
	}
	if len(k.Topics) != len(ours.Topics) {
		fail("topic count", len(k.Topics), len(ours.Topics))
	}
	for i := range k.Topics {
		kt, ot := &k.Topics[i], &ours.Topics[i]
		wantName := ot.Name
		if v < 12 {
			wantName = NullStringOf(ot.Name.S) // null is written as "" before v12
		}
		var wantID [16]byte
		if v >= 10 {
			wantID = ot.TopicID
		}
		if ErrorCode(kt.ErrorCode) != ot.ErrorCode || nsOf(kt.Topic) != wantName || kt.TopicID != wantID ||
			kt.IsInternal != (ot.IsInternal && v >= 1) || kt.AuthorizedOperations != at(8, ot.TopicAuthorizedOperations, AuthorizedOperationsUnknown) {
			fail("topic", kt, ot)
		}
		if len(kt.Partitions) != len(ot.Partitions) {
			fail("partition count", len(kt.Partitions), len(ot.Partitions))
		}
		for j := range kt.Partitions {
			kp, op := &kt.Partitions[j], &ot.Partitions[j]
			wantOffline := op.OfflineReplicas
			if v < 5 {
				wantOffline = nil
			}
			if ErrorCode(kp.ErrorCode) != op.ErrorCode || kp.Partition != op.PartitionIndex || kp.Leader != op.LeaderID ||
				kp.LeaderEpoch != at(7, op.LeaderEpoch, -1) || !slices.Equal(kp.Replicas, op.ReplicaNodes) ||
				!slices.Equal(kp.ISR, op.IsrNodes) || !slices.Equal(kp.OfflineReplicas, wantOffline) {
				fail("partition", kp, op)
			}
		}
	}
	wantClusterOps := AuthorizedOperationsUnknown
	if v >= 8 && v <= 10 {
		wantClusterOps = ours.ClusterAuthorizedOperations
	}
	if k.AuthorizedOperations != wantClusterOps {
		fail("ClusterAuthorizedOperations", k.AuthorizedOperations, ours.ClusterAuthorizedOperations)
	}
	if ErrorCode(k.ErrorCode) != ErrorCode(at(13, int32(ours.ErrorCode), 0)) {
		fail("ErrorCode", k.ErrorCode, ours.ErrorCode)
	}
}

func TestMetadataResponseOracle(t *testing.T) {
	g := newOracleGen(33)
	var buf []byte
	for v := int16(metadataMinVersion); v <= metadataMaxVersion; v++ {
		for range 40 {
			ours := g.metadataResponse()
			buf = ours.AppendTo(buf[:0], v)
			k := kmsg.NewPtrMetadataResponse()
			k.Version = v
			if err := k.ReadFrom(buf); err != nil {
				t.Fatalf("v%d: kmsg: %v", v, err)
			}
			prodCheckMetadataResponse(t, v, ours, k)
			if again := k.AppendTo(nil); !bytes.Equal(again, buf) {
				t.Fatalf("v%d: kmsg re-encode differs (%d vs %d bytes)", v, len(again), len(buf))
			}
		}
	}
}

func FuzzMetadataRequest(f *testing.F) {
	g := newOracleGen(333)
	for v := int16(metadataMinVersion); v <= metadataMaxVersion; v++ {
		for range 3 {
			k := g.kmsgMetadataRequest(v)
			if v >= 9 {
				g.unknownTags(&k.UnknownTags)
			}
			if b := k.AppendTo(nil); len(b) < 2048 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r MetadataRequest
		for v := int16(metadataMinVersion) - 1; v <= metadataMaxVersion+1; v++ {
			err := r.Decode(body, v)
			if v < metadataMinVersion || v > metadataMaxVersion {
				if !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("v%d: %v", v, err)
				}
				continue
			}
			if err != nil {
				continue
			}
			// Whatever we accept, kmsg accepts with the same content.
			k := kmsg.NewPtrMetadataRequest()
			k.Version = v
			if err := k.ReadFrom(body); err != nil {
				t.Fatalf("v%d: kmsg rejects what we accept: %v", v, err)
			}
			if d := prodMetadataRequestMatches(&r, k, v); d != "" {
				t.Fatalf("v%d: %s", v, d)
			}
			// Our encoding decodes back to the same request.
			var again MetadataRequest
			if err := again.Decode(r.AppendTo(nil, v), v); err != nil {
				t.Fatalf("v%d: re-decode: %v", v, err)
			}
			if again.AllowAutoTopicCreation != r.AllowAutoTopicCreation || (again.Topics == nil) != (r.Topics == nil) ||
				!slices.Equal(again.Topics, r.Topics) || again.IncludeClusterAuthorizedOperations != r.IncludeClusterAuthorizedOperations ||
				again.IncludeTopicAuthorizedOperations != r.IncludeTopicAuthorizedOperations {
				t.Fatalf("v%d: round trip %+v vs %+v", v, again, r)
			}
		}
	})
}

func prodBenchMetadataResponse() *MetadataResponse {
	r := &MetadataResponse{ClusterID: NullStringOf("kiggy-cluster"), ControllerID: 1, ClusterAuthorizedOperations: AuthorizedOperationsUnknown}
	for i := range 3 {
		r.Brokers = append(r.Brokers, MetadataResponseBroker{NodeID: int32(i + 1), Host: "gateway-0.example.internal", Port: 9092})
	}
	for i := range 20 {
		t := MetadataResponseTopic{Name: NullStringOf("orders-" + string(rune('a'+i))), TopicAuthorizedOperations: AuthorizedOperationsUnknown}
		for p := range 6 {
			n := []int32{int32(p%3 + 1)}
			t.Partitions = append(t.Partitions, MetadataResponsePartition{PartitionIndex: int32(p), LeaderID: n[0], LeaderEpoch: -1, ReplicaNodes: n, IsrNodes: n})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// BenchmarkMetadataResponseEncode: 3 brokers, 20 topics × 6 partitions, v12.
func BenchmarkMetadataResponseEncode(b *testing.B) {
	r := prodBenchMetadataResponse()
	buf := r.AppendTo(nil, 12)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendTo(buf[:0], 12)
	}
}

// TestMetadataRequestTrailingBytes: librdkafka 2.16's all-topics Metadata
// v13 request, as captured on the wire from confluent-kafka-python's
// list_topics(), has three bytes after its tagged fields; Kafka ignores
// them and so must kiggy (docs/design/kafka-protocol.md §2.4).
func TestMetadataRequestTrailingBytes(t *testing.T) {
	body := []byte{0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00}
	var r MetadataRequest
	if err := r.Decode(body, 13); err != nil {
		t.Fatalf("librdkafka 2.16 all-topics request: %v", err)
	}
	if r.Topics != nil || r.AllowAutoTopicCreation || r.IncludeTopicAuthorizedOperations {
		t.Fatalf("librdkafka 2.16 all-topics request decoded as %+v, want all topics, no auto-creation", r)
	}
	// A body cut short still fails.
	if err := r.Decode(body[:2], 13); err == nil {
		t.Fatal("a truncated body decoded")
	}
}

// metadataCheckPrefixes is prodCheckPrefixes for Metadata requests, which
// accept trailing bytes (TestMetadataRequestTrailingBytes): every prefix of
// body fails, and body with a byte appended decodes as body does.
func metadataCheckPrefixes(t *testing.T, body []byte, v int16) {
	t.Helper()
	for i := range body {
		if err := new(MetadataRequest).Decode(body[:i:i], v); err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", i, len(body))
		}
	}
	var a, b MetadataRequest
	if err := a.Decode(body, v); err != nil {
		t.Fatal(err)
	}
	if err := b.Decode(append(append([]byte(nil), body...), 0), v); err != nil {
		t.Fatalf("v%d with a trailing byte: %v", v, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("v%d with a trailing byte decoded as %+v, without as %+v", v, b, a)
	}
}

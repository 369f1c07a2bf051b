package wire

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	csRegisterRequest(csReqAPI{
		name: "Fetch", key: KeyFetch, min: 4, max: fetchMax, flexFrom: 12,
		build: csBuildFetchRequest,
		newDecode: func() func([]byte, int16) (csKmsg, error) {
			var r FetchRequest
			return func(b []byte, v int16) (csKmsg, error) {
				if err := r.Decode(b, v); err != nil {
					return nil, err
				}
				return csFetchRequestToKmsg(&r), nil
			}
		},
	})
	csRegisterResponse(csRespAPI{
		name: "Fetch", key: KeyFetch, min: 4, max: fetchMax, flexFrom: 12,
		build: func(g *oracleGen, v int16) (func([]byte) []byte, csKmsg) {
			r := csBuildFetchResponse(g)
			return func(dst []byte) []byte { return r.AppendTo(dst, v) }, csFetchResponseToKmsg(r)
		},
		empty: func() csKmsg { return kmsg.NewPtrFetchResponse() },
	})
}

func csBuildFetchRequest(g *oracleGen, _ int16, tags bool) csKmsg {
	k := kmsg.NewPtrFetchRequest()
	k.ClusterID = g.ptr()
	k.ReplicaID = g.i32()
	k.MaxWaitMillis = g.i32()
	k.MinBytes = g.i32()
	k.MaxBytes = g.i32()
	k.IsolationLevel = g.i8()
	k.SessionID = g.i32()
	k.SessionEpoch = g.i32()
	for range g.nOuter() {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = g.str()
		t.TopicID = g.uuid()
		for range g.nInner() {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition = g.i32()
			p.CurrentLeaderEpoch = g.i32()
			p.FetchOffset = g.i64()
			p.LastFetchedEpoch = g.i32()
			p.LogStartOffset = g.i64()
			p.PartitionMaxBytes = g.i32()
			// Replica-only partition tags 0 and 1 (v17+, v18+): kmsg
			// writes them in any flexible version; below v13 we must
			// skip them like unknown tags.
			dir, hw := [16]byte{1, byte(g.r.Uint32())}, g.i64()
			if tags {
				p.ReplicaDirectoryID, p.HighWatermark = dir, hw
			}
			p.UnknownTags = g.tagsIf(tags)
			t.Partitions = append(t.Partitions, p)
		}
		t.UnknownTags = g.tagsIf(tags)
		k.Topics = append(k.Topics, t)
	}
	for range g.nOuter() {
		f := kmsg.NewFetchRequestForgottenTopic()
		f.Topic = g.str()
		f.TopicID = g.uuid()
		f.Partitions = g.int32s()
		f.UnknownTags = g.tagsIf(tags)
		k.ForgottenTopics = append(k.ForgottenTopics, f)
	}
	k.Rack = g.str()
	// ReplicaState is top-level tag 1 (v15+): unknown at v12.
	id, epoch := g.i32(), g.i64()
	if tags {
		k.ReplicaState.ID, k.ReplicaState.Epoch = id|1, epoch
	}
	k.UnknownTags = g.tagsIf(tags)
	return k
}

func csFetchRequestToKmsg(r *FetchRequest) *kmsg.FetchRequest {
	k := kmsg.NewPtrFetchRequest()
	k.ClusterID = ptrOf(r.ClusterID)
	k.ReplicaID = r.ReplicaID
	k.MaxWaitMillis = r.MaxWaitMillis
	k.MinBytes = r.MinBytes
	k.MaxBytes = r.MaxBytes
	k.IsolationLevel = r.IsolationLevel
	k.SessionID = r.SessionID
	k.SessionEpoch = r.SessionEpoch
	for _, t := range r.Topics {
		kt := kmsg.NewFetchRequestTopic()
		kt.Topic, kt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			kp := kmsg.NewFetchRequestTopicPartition()
			kp.Partition = p.Partition
			kp.CurrentLeaderEpoch = p.CurrentLeaderEpoch
			kp.FetchOffset = p.FetchOffset
			kp.LastFetchedEpoch = p.LastFetchedEpoch
			kp.LogStartOffset = p.LogStartOffset
			kp.PartitionMaxBytes = p.PartitionMaxBytes
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	for _, f := range r.ForgottenTopics {
		kf := kmsg.NewFetchRequestForgottenTopic()
		kf.Topic, kf.TopicID = f.Topic, f.TopicID
		kf.Partitions = append([]int32(nil), f.Partitions...)
		k.ForgottenTopics = append(k.ForgottenTopics, kf)
	}
	k.Rack = r.Rack
	return k
}

func csBuildFetchResponse(g *oracleGen) *FetchResponse {
	r := &FetchResponse{ThrottleMillis: g.i32(), ErrorCode: g.code(), SessionID: g.i32()}
	for range g.nOuter() {
		t := FetchResponseTopic{Topic: g.str(), TopicID: g.uuid()}
		for range g.nInner() {
			p := FetchResponseTopicPartition{
				Partition:            g.i32(),
				ErrorCode:            g.code(),
				HighWatermark:        g.i64(),
				LastStableOffset:     g.i64(),
				LogStartOffset:       g.i64(),
				PreferredReadReplica: g.i32(),
				Records:              g.bytes(),
			}
			if !g.empty && g.bool() {
				p.AbortedTransactions = make([]FetchResponseTopicPartitionAbortedTransaction, g.r.IntN(3))
				for i := range p.AbortedTransactions {
					p.AbortedTransactions[i] = FetchResponseTopicPartitionAbortedTransaction{ProducerID: g.i64(), FirstOffset: g.i64()}
				}
			}
			if g.r.IntN(5) == 0 {
				p.Records = nil // written as empty, not null
			}
			if g.bool() {
				// A known leader (id ≥ 0), as kiggy sends: kmsg leaves a
				// hint equal to the default (-1, -1) out.
				p.CurrentLeader = LeaderHint{Valid: true, LeaderID: g.i32() & 0x7fffffff, LeaderEpoch: g.i32()}
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func csFetchResponseToKmsg(r *FetchResponse) *kmsg.FetchResponse {
	k := kmsg.NewPtrFetchResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	k.SessionID = r.SessionID
	for _, t := range r.Topics {
		kt := kmsg.NewFetchResponseTopic()
		kt.Topic, kt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			kp := kmsg.NewFetchResponseTopicPartition()
			kp.Partition = p.Partition
			kp.ErrorCode = int16(p.ErrorCode)
			kp.HighWatermark = p.HighWatermark
			kp.LastStableOffset = p.LastStableOffset
			kp.LogStartOffset = p.LogStartOffset
			if p.AbortedTransactions != nil {
				kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for _, a := range p.AbortedTransactions {
					ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					ka.ProducerID, ka.FirstOffset = a.ProducerID, a.FirstOffset
					kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
				}
			}
			kp.PreferredReadReplica = p.PreferredReadReplica
			if p.CurrentLeader.Valid {
				kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch
			}
			kp.RecordBatches = p.Records
			if kp.RecordBatches == nil {
				kp.RecordBatches = []byte{}
			}
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestFetchRequestOracle(t *testing.T)  { csCheckRequest(t, csFindReq("Fetch")) }
func TestFetchResponseOracle(t *testing.T) { csCheckResponse(t, csFindResp("Fetch")) }

// TestFetchRequestDefaults checks the values of fields a version lacks.
func TestFetchRequestDefaults(t *testing.T) {
	k := kmsg.NewPtrFetchRequest()
	k.Version = 4
	k.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 3, CurrentLeaderEpoch: 9, LastFetchedEpoch: 9, LogStartOffset: 9, FetchOffset: 7}}}}
	k.SessionID, k.SessionEpoch, k.Rack = 5, 5, "rack"
	var r FetchRequest
	r.ForgottenTopics = []FetchRequestForgottenTopic{{Topic: "stale"}}
	r.ClusterID = NullStringOf("stale")
	if err := r.Decode(k.AppendTo(nil), 4); err != nil {
		t.Fatal(err)
	}
	p := r.Topics[0].Partitions[0]
	if r.SessionID != 0 || r.SessionEpoch != -1 || r.Rack != "" || len(r.ForgottenTopics) != 0 || r.ClusterID.Valid ||
		p.CurrentLeaderEpoch != -1 || p.LastFetchedEpoch != -1 || p.LogStartOffset != -1 || p.FetchOffset != 7 {
		t.Fatalf("absent fields not defaulted: %+v %+v", r, p)
	}
}

// TestFetchRequestTopicIDs checks what v13+ changes: topics and forgotten
// topics by id, no name, and no ReplicaId from v15 on (read as -1, a
// consumer).
func TestFetchRequestTopicIDs(t *testing.T) {
	id := [16]byte{0x5a, 1, 2, 3, 4, 5, 6, 0x47, 0x88, 9, 10, 11, 12, 13, 14, 15}
	for v := int16(13); v <= fetchMax; v++ {
		k := kmsg.NewPtrFetchRequest()
		k.Version = v
		k.ReplicaID = 7 // written up to v14 only
		k.Topics = []kmsg.FetchRequestTopic{{Topic: "ignored", TopicID: id, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 3}}}}
		k.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "ignored", TopicID: id, Partitions: []int32{1}}}
		var r FetchRequest
		if err := r.Decode(k.AppendTo(nil), v); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		tp := r.Topics[0]
		if tp.Topic != "" || tp.TopicID != id || r.ForgottenTopics[0].Topic != "" || r.ForgottenTopics[0].TopicID != id {
			t.Fatalf("v%d: topic %q id %x, forgotten %+v", v, tp.Topic, tp.TopicID, r.ForgottenTopics[0])
		}
		if want := map[bool]int32{true: 7, false: -1}[v < 15]; r.ReplicaID != want {
			t.Fatalf("v%d: ReplicaID %d, want %d", v, r.ReplicaID, want)
		}
	}
}

// TestFetchRequestViews checks that strings alias the frame (no copies) and
// so change when the frame is overwritten.
func TestFetchRequestViews(t *testing.T) {
	k := kmsg.NewPtrFetchRequest()
	k.Version = 12
	k.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{}}}}
	body := k.AppendTo(nil)
	var r FetchRequest
	if err := r.Decode(body, 12); err != nil {
		t.Fatal(err)
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(r.Topics[0].Topic)))
	if p < uintptr(unsafe.Pointer(&body[0])) || p >= uintptr(unsafe.Pointer(&body[0]))+uintptr(len(body)) {
		t.Fatal("topic name was copied out of the frame")
	}
	copy(body[bytes.Index(body, []byte("orders")):], "ORDERS")
	if r.Topics[0].Topic != "ORDERS" {
		t.Fatalf("topic = %q after overwriting the frame", r.Topics[0].Topic)
	}
}

// TestFetchResponseStreaming checks that the Begin/End path writes exactly
// what AppendTo writes, for records sizes on both sides of every varint
// width and hints that are exact, too small and too large — so the reserved
// length both shrinks and grows — and with the partition's leading fields
// only known at End.
func TestFetchResponseStreaming(t *testing.T) {
	sizes := []int{0, 1, 126, 127, 128, 16382, 16383, 16384, 70000, 2097151, 2097152}
	hints := []int{-1, 0, 127, 16384, 1 << 20, 1 << 30, 1<<31 + 5}
	for v := int16(4); v <= fetchMax; v++ {
		for _, n := range sizes {
			rec := make([]byte, n)
			for i := range rec {
				rec[i] = byte(i * 7)
			}
			for _, hint := range hints {
				p := FetchResponseTopicPartition{
					Partition: 3, ErrorCode: OffsetOutOfRange, HighWatermark: 1000, LastStableOffset: 999,
					LogStartOffset: 5, PreferredReadReplica: -1, Records: rec,
					AbortedTransactions: []FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 1, FirstOffset: 2}},
					CurrentLeader:       LeaderHint{Valid: hint > 0, LeaderID: 2, LeaderEpoch: 7},
				}
				whole := &FetchResponse{SessionID: 0, Topics: []FetchResponseTopic{{Topic: "t", TopicID: [16]byte{7}, Partitions: []FetchResponseTopicPartition{p, p}}}}
				want := whole.AppendTo([]byte("x"), v)

				dst := AppendFetchResponseStart([]byte("x"), v, 0, NoError, 0, 1)
				dst = AppendFetchTopicStart(dst, v, "t", [16]byte{7}, 2)
				for range 2 {
					early := p
					early.ErrorCode, early.HighWatermark, early.LastStableOffset, early.LogStartOffset = 0, -7, -7, -7
					var m FetchPartitionMark
					dst, m = AppendFetchPartitionBegin(dst, v, &early, hint)
					dst = append(dst, rec...)
					if got := dst[m.RecordsStart():]; !bytes.Equal(got, rec) {
						t.Fatal("RecordsStart does not point at the records")
					}
					dst = AppendFetchPartitionEnd(dst, m, &p)
				}
				dst = AppendFetchTopicEnd(dst, v)
				dst = AppendFetchResponseEnd(dst, v)
				if !bytes.Equal(dst, want) {
					t.Fatalf("v%d records %d hint %d: streaming bytes differ from AppendTo", v, n, hint)
				}

				// The same with the records outside the buffer, put in at
				// the offsets returned, as the engine writes splices.
				dst = AppendFetchResponseStart([]byte("x"), v, 0, NoError, 0, 1)
				dst = AppendFetchTopicStart(dst, v, "t", [16]byte{7}, 2)
				var at []int
				for i := range 2 {
					var m FetchPartitionMark
					dst, m = AppendFetchPartitionBegin(dst, v, &p, hint)
					if i == 1 {
						dst = append(dst, "discarded"...)
					}
					var a int
					dst, a = AppendFetchPartitionEndExternal(dst, m, &p, len(rec))
					at = append(at, a)
				}
				dst = AppendFetchTopicEnd(dst, v)
				dst = AppendFetchResponseEnd(dst, v)
				joined := append([]byte(nil), dst[:at[0]]...)
				joined = append(joined, rec...)
				joined = append(joined, dst[at[0]:at[1]]...)
				joined = append(joined, rec...)
				joined = append(joined, dst[at[1]:]...)
				if !bytes.Equal(joined, want) {
					t.Fatalf("v%d records %d hint %d: external records differ from AppendTo", v, n, hint)
				}
			}
		}
	}
}

// TestRelistFetchAborted: a partition begun with one list of aborted
// transactions and relisted with another after its records were appended
// (longer, shorter, none, null) is byte for byte the partition written
// with the second list from the start, at every version, for records in
// the buffer and outside it.
func TestRelistFetchAborted(t *testing.T) {
	type aborted = []FetchResponseTopicPartitionAbortedTransaction
	lists := []aborted{nil, {}, {{ProducerID: 7, FirstOffset: 3}}, {{ProducerID: 7, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 5}, {ProducerID: 1, FirstOffset: 8}}}
	rec := bytes.Repeat([]byte("r"), 300)
	for v := int16(4); v <= fetchMax; v++ {
		for _, first := range lists {
			for _, second := range lists {
				p := FetchResponseTopicPartition{Partition: 2, HighWatermark: 40, LastStableOffset: 30, LogStartOffset: 1, PreferredReadReplica: -1, Records: rec}
				p.AbortedTransactions = second
				want := AppendFetchPartition([]byte("head"), v, &p)

				p.AbortedTransactions = first
				dst, m := AppendFetchPartitionBegin([]byte("head"), v, &p, 1<<20)
				dst = append(dst, rec...)
				p.AbortedTransactions = second
				dst, m = RelistFetchAborted(dst, m, &p)
				if got := dst[m.RecordsStart():]; !bytes.Equal(got, rec) {
					t.Fatalf("v%d %v → %v: the records moved wrong", v, first, second)
				}
				dst = AppendFetchPartitionEnd(dst, m, &p)
				if !bytes.Equal(dst, want) {
					t.Fatalf("v%d %v → %v: relisted partition differs from one written with the list", v, first, second)
				}

				p.AbortedTransactions = first
				dst, m = AppendFetchPartitionBegin([]byte("head"), v, &p, 1<<20)
				p.AbortedTransactions = second
				dst, m = RelistFetchAborted(dst, m, &p)
				dst, at := AppendFetchPartitionEndExternal(dst, m, &p, len(rec))
				joined := append(append(append([]byte(nil), dst[:at]...), rec...), dst[at:]...)
				if !bytes.Equal(joined, want) {
					t.Fatalf("v%d %v → %v: relisted partition with external records differs", v, first, second)
				}
			}
		}
	}
}

// TestFetchPartitionDiscard checks that truncating to RecordsStart drops
// records appended after Begin.
func TestFetchPartitionDiscard(t *testing.T) {
	for v := int16(4); v <= fetchMax; v++ {
		p := FetchResponseTopicPartition{Partition: 1, PreferredReadReplica: -1}
		dst, m := AppendFetchPartitionBegin(nil, v, &p, 1<<20)
		dst = append(dst, make([]byte, 300)...)
		dst = dst[:m.RecordsStart()]
		p.ErrorCode = KafkaStorageError
		dst = AppendFetchPartitionEnd(dst, m, &p)
		if want := AppendFetchPartition(nil, v, &p); !bytes.Equal(dst, want) {
			t.Fatalf("v%d: discarded partition differs from an empty one", v)
		}
	}
}

func BenchmarkFetchRequestDecode(b *testing.B) {
	body := csEncodeRequest(csFindReq("Fetch"), 12, 1, 2, false)
	var r FetchRequest
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := r.Decode(body, 12); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFetchResponseEncode(b *testing.B) {
	rec := make([]byte, 64<<10)
	resp := &FetchResponse{}
	for i := range 4 {
		t := FetchResponseTopic{Topic: "topic"}
		for j := range 8 {
			t.Partitions = append(t.Partitions, FetchResponseTopicPartition{Partition: int32(i*8 + j), HighWatermark: 1 << 20, LastStableOffset: 1 << 20, PreferredReadReplica: -1})
		}
		resp.Topics = append(resp.Topics, t)
	}
	buf := make([]byte, 0, 4<<20)
	b.ReportAllocs()
	b.SetBytes(int64(32 * len(rec)))
	for b.Loop() {
		dst := AppendFetchResponseStart(buf[:0], 12, 0, NoError, 0, len(resp.Topics))
		for i := range resp.Topics {
			t := &resp.Topics[i]
			dst = AppendFetchTopicStart(dst, 12, t.Topic, t.TopicID, len(t.Partitions))
			for j := range t.Partitions {
				var m FetchPartitionMark
				dst, m = AppendFetchPartitionBegin(dst, 12, &t.Partitions[j], len(rec))
				dst = append(dst, rec...)
				dst = AppendFetchPartitionEnd(dst, m, &t.Partitions[j])
			}
			dst = AppendFetchTopicEnd(dst, 12)
		}
		buf = AppendFetchResponseEnd(dst, 12)
	}
}

// TestRewriteFetchArrayLen: a response whose counts were written for more
// topics and partitions than followed (an incremental Fetch leaving
// unchanged partitions out) decodes, after the rewrite, as kmsg reads the
// same response written with the right counts, at every version; the
// COMPACT counts of 200 shrink by a byte.
func TestRewriteFetchArrayLen(t *testing.T) {
	for v := int16(7); v <= fetchMax; v++ {
		p := FetchResponseTopicPartition{Partition: 7, HighWatermark: 9, LastStableOffset: 9, LogStartOffset: 0, PreferredReadReplica: -1, Records: []byte("rec")}
		dst := AppendFetchResponseStart(nil, v, 0, NoError, 42, 200)
		topicsEnd := len(dst)
		dst = AppendFetchTopicStart(dst, v, "t", [16]byte{1}, 200)
		partsEnd := len(dst)
		dst = AppendFetchPartition(dst, v, &p)
		dst, shift := RewriteFetchArrayLen(dst, v, partsEnd, 200, 1)
		if want := 0; v >= fetchFlexible {
			if shift != 1 {
				t.Fatalf("v%d: shift %d, want 1", v, shift)
			}
		} else if shift != want {
			t.Fatalf("v%d: shift %d", v, shift)
		}
		dst = AppendFetchTopicEnd(dst, v)
		dst, _ = RewriteFetchArrayLen(dst, v, topicsEnd, 200, 1)
		dst = AppendFetchResponseEnd(dst, v)
		SetFetchResponseSession(dst, 0, v, InvalidFetchSessionEpoch, 77)
		want := (&FetchResponse{ErrorCode: InvalidFetchSessionEpoch, SessionID: 77, Topics: []FetchResponseTopic{{Topic: "t", TopicID: [16]byte{1}, Partitions: []FetchResponseTopicPartition{p}}}}).AppendTo(nil, v)
		if !bytes.Equal(dst, want) {
			t.Fatalf("v%d: rewritten\n%x\nwant\n%x", v, dst, want)
		}
		k := kmsg.NewPtrFetchResponse()
		k.Version = v
		if err := k.ReadFrom(dst); err != nil || len(k.Topics) != 1 || len(k.Topics[0].Partitions) != 1 || k.SessionID != 77 {
			t.Fatalf("v%d: kmsg: %v %+v", v, err, k)
		}
	}
}

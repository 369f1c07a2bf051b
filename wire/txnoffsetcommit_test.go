package wire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnGenTxnOffsetCommitRequest(g *oracleGen, _ int16) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.TransactionalID = g.str()
	r.Group = g.str()
	r.ProducerID = g.i64()
	r.ProducerEpoch = g.i16()
	r.Generation = g.i32()
	r.MemberID = g.str()
	r.InstanceID = g.ptr()
	for range g.n(true) {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = g.str()
		for range g.n(true) {
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition = g.i32()
			p.Offset = g.i64()
			p.LeaderEpoch = g.i32()
			p.Metadata = g.ptr()
			p.UnknownTags = g.tags()
			t.Partitions = append(t.Partitions, p)
		}
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	r.UnknownTags = g.tags()
	return r
}

func txnTxnOffsetCommitRequestToKmsg(r *TxnOffsetCommitRequest, v int16) *kmsg.TxnOffsetCommitRequest {
	k := kmsg.NewPtrTxnOffsetCommitRequest()
	k.Version = v
	k.TransactionalID = r.TransactionalID
	k.Group = r.Group
	k.ProducerID = r.ProducerID
	k.ProducerEpoch = r.ProducerEpoch
	k.Generation = r.Generation
	k.MemberID = r.MemberID
	k.InstanceID = ptrOf(r.InstanceID)
	for _, t := range r.Topics {
		kt := kmsg.NewTxnOffsetCommitRequestTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			kp.Partition = p.Partition
			kp.Offset = p.Offset
			kp.LeaderEpoch = p.LeaderEpoch
			kp.Metadata = ptrOf(p.Metadata)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestTxnOffsetCommitRequestOracle(t *testing.T) {
	admRequestOracle(t, 28, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion,
		txnGenTxnOffsetCommitRequest, (*TxnOffsetCommitRequest).Decode, txnTxnOffsetCommitRequestToKmsg)
	txnRequestRoundTrip(t, 128, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion,
		txnGenTxnOffsetCommitRequest, (*TxnOffsetCommitRequest).Decode, (*TxnOffsetCommitRequest).AppendTo, txnTxnOffsetCommitRequestToKmsg)
	txnVersionsRefused(t, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion, (*TxnOffsetCommitRequest).Decode)
}

// TestTxnOffsetCommitRequestDefaults: fields a version lacks read as their
// schema defaults, also when the struct held a later version's values.
func TestTxnOffsetCommitRequestDefaults(t *testing.T) {
	k := kmsg.NewPtrTxnOffsetCommitRequest()
	k.Version = 3
	k.Generation, k.MemberID, k.InstanceID = 7, "m", ptrOf(NullStringOf("i"))
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.LeaderEpoch = 9
	k.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	var r TxnOffsetCommitRequest
	if err := r.Decode(k.AppendTo(nil), 3); err != nil || r.Generation != 7 || r.Topics[0].Partitions[0].LeaderEpoch != 9 {
		t.Fatalf("v3: %+v %v", r, err)
	}
	k.Version = 1
	if err := r.Decode(k.AppendTo(nil), 1); err != nil {
		t.Fatal(err)
	}
	if r.Generation != -1 || r.MemberID != "" || r.InstanceID.Valid || r.Topics[0].Partitions[0].LeaderEpoch != -1 {
		t.Fatalf("v1: defaults not restored: %+v", r)
	}
}

func txnGenTxnOffsetCommitResponse(g *oracleGen, _ int16) *TxnOffsetCommitResponse {
	r := &TxnOffsetCommitResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := TxnOffsetCommitResponseTopic{Topic: g.str()}
		for range g.n(true) {
			t.Partitions = append(t.Partitions, TxnOffsetCommitResponsePartition{Partition: g.i32(), ErrorCode: g.code()})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func txnTxnOffsetCommitResponseToKmsg(r *TxnOffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
	k := kmsg.NewPtrTxnOffsetCommitResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewTxnOffsetCommitResponseTopic()
		kt.Topic = t.Topic
		for _, p := range t.Partitions {
			kp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			kp.Partition = p.Partition
			kp.ErrorCode = int16(p.ErrorCode)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestTxnOffsetCommitResponseOracle(t *testing.T) {
	admResponseOracle(t, 1028, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion,
		txnGenTxnOffsetCommitResponse, (*TxnOffsetCommitResponse).AppendTo, txnTxnOffsetCommitResponseToKmsg)
	txnResponseRead(t, 2028, TxnOffsetCommitMinVersion, TxnOffsetCommitMaxVersion,
		txnGenTxnOffsetCommitResponse, (*TxnOffsetCommitResponse).AppendTo, txnTxnOffsetCommitResponseToKmsg, nil)
}

// TestTxnOffsetCommitResponseDecode: Decode reads back every version of
// what AppendTo wrote (a forwarding group coordinator reads the
// transaction coordinator's answer), and refuses every truncation.
func TestTxnOffsetCommitResponseDecode(t *testing.T) {
	g := newOracleGen(0x7428)
	for v := TxnOffsetCommitMinVersion; v <= TxnOffsetCommitMaxVersion; v++ {
		for range 50 {
			want := txnGenTxnOffsetCommitResponse(g, v)
			body := want.AppendTo(nil, v)
			var got TxnOffsetCommitResponse
			if err := got.Decode(body, v); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			if !bytes.Equal(got.AppendTo(nil, v), body) {
				t.Fatalf("v%d: decoded %+v, want %+v", v, got, *want)
			}
			for n := range len(body) {
				if err := got.Decode(body[:n], v); err == nil {
					t.Fatalf("v%d: a body cut to %d of %d bytes decoded", v, n, len(body))
				}
			}
		}
	}
	var r TxnOffsetCommitResponse
	if err := r.Decode(nil, TxnOffsetCommitMaxVersion+1); err != ErrUnsupportedVersion {
		t.Fatalf("v%d: %v, want ErrUnsupportedVersion", TxnOffsetCommitMaxVersion+1, err)
	}
}

// FuzzTxnOffsetCommitResponse: Decode never panics, and what it accepts
// encodes back to the same bytes.
func FuzzTxnOffsetCommitResponse(f *testing.F) {
	g := newOracleGen(0x7429)
	for v := TxnOffsetCommitMinVersion; v <= TxnOffsetCommitMaxVersion; v++ {
		f.Add(byte(v), txnGenTxnOffsetCommitResponse(g, v).AppendTo(nil, v))
	}
	f.Fuzz(func(t *testing.T, vb byte, body []byte) {
		v := int16(vb % byte(TxnOffsetCommitMaxVersion+1))
		var r TxnOffsetCommitResponse
		if err := r.Decode(body, v); err != nil {
			return
		}
		if out := r.AppendTo(nil, v); len(out) > len(body) {
			t.Fatalf("v%d: %d bytes re-encoded from %d", v, len(out), len(body))
		}
	})
}

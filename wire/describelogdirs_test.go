package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDescribeLogDirsRequest(g *oracleGen, _ int16) *kmsg.DescribeLogDirsRequest {
	r := kmsg.NewPtrDescribeLogDirsRequest()
	if g.r.IntN(4) != 0 { // else null: every partition
		r.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		for range g.n(true) {
			t := kmsg.NewDescribeLogDirsRequestTopic()
			t.Topic = g.str()
			t.Partitions = g.int32s()
			t.UnknownTags = g.tags()
			r.Topics = append(r.Topics, t)
		}
	}
	r.UnknownTags = g.tags()
	return r
}

func admDescribeLogDirsRequestToKmsg(r *DescribeLogDirsRequest, v int16) *kmsg.DescribeLogDirsRequest {
	k := kmsg.NewPtrDescribeLogDirsRequest()
	k.Version = v
	if r.Topics != nil {
		k.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	}
	for _, t := range r.Topics {
		kt := kmsg.NewDescribeLogDirsRequestTopic()
		kt.Topic = t.Topic
		kt.Partitions = admI32(t.Partitions)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestDescribeLogDirsRequestOracle(t *testing.T) {
	admRequestOracle(t, 35, describeLogDirsMin, describeLogDirsMax,
		admGenDescribeLogDirsRequest, (*DescribeLogDirsRequest).Decode, admDescribeLogDirsRequestToKmsg)
}

// TestDescribeLogDirsRequestNull: a null topic array ("null for all
// topics") decodes to nil, an empty one to an empty slice, in every
// version, also into a reused request.
func TestDescribeLogDirsRequestNull(t *testing.T) {
	for v := describeLogDirsMin; v <= describeLogDirsMax; v++ {
		var r DescribeLogDirsRequest
		all := kmsg.NewPtrDescribeLogDirsRequest()
		all.Version = v
		none := kmsg.NewPtrDescribeLogDirsRequest()
		none.Version = v
		none.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		if err := r.Decode(none.AppendTo(nil), v); err != nil || r.Topics == nil || len(r.Topics) != 0 {
			t.Fatalf("v%d empty array: %v %#v", v, err, r.Topics)
		}
		if err := r.Decode(all.AppendTo(nil), v); err != nil || r.Topics != nil {
			t.Fatalf("v%d null array: %v %#v", v, err, r.Topics)
		}
	}
	var r DescribeLogDirsRequest
	if err := r.Decode(nil, 0); err != ErrUnsupportedVersion {
		t.Errorf("v0 (removed in Kafka 4.0): %v, want ErrUnsupportedVersion", err)
	}
}

func admGenDescribeLogDirsResponse(g *oracleGen, _ int16) *DescribeLogDirsResponse {
	r := &DescribeLogDirsResponse{ThrottleMillis: g.i32(), ErrorCode: g.code()}
	for range g.n(false) {
		d := DescribeLogDirsResult{ErrorCode: g.code(), LogDir: g.str(), TotalBytes: g.i64(), UsableBytes: g.i64()}
		for range g.n(true) {
			tp := DescribeLogDirsTopic{Topic: g.str()}
			for range g.n(true) {
				tp.Partitions = append(tp.Partitions, DescribeLogDirsPartition{Partition: g.i32(), Size: g.i64(), OffsetLag: g.i64(), IsFuture: g.bool()})
			}
			d.Topics = append(d.Topics, tp)
		}
		r.Results = append(r.Results, d)
	}
	return r
}

func admDescribeLogDirsResponseToKmsg(r *DescribeLogDirsResponse) *kmsg.DescribeLogDirsResponse {
	k := kmsg.NewPtrDescribeLogDirsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	k.ErrorCode = int16(r.ErrorCode)
	for _, d := range r.Results {
		kd := kmsg.NewDescribeLogDirsResponseDir()
		kd.ErrorCode = int16(d.ErrorCode)
		kd.Dir = d.LogDir
		kd.TotalBytes, kd.UsableBytes = d.TotalBytes, d.UsableBytes
		for _, tp := range d.Topics {
			kt := kmsg.NewDescribeLogDirsResponseDirTopic()
			kt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				kp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				kp.Partition, kp.Size, kp.OffsetLag, kp.IsFuture = p.Partition, p.Size, p.OffsetLag, p.IsFuture
				kt.Partitions = append(kt.Partitions, kp)
			}
			kd.Topics = append(kd.Topics, kt)
		}
		k.Dirs = append(k.Dirs, kd)
	}
	return k
}

func TestDescribeLogDirsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1035, describeLogDirsMin, describeLogDirsMax,
		admGenDescribeLogDirsResponse, (*DescribeLogDirsResponse).AppendTo, admDescribeLogDirsResponseToKmsg)
}

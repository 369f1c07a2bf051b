package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDescribeTopicPartitionsRequest(g *oracleGen, _ int16) *kmsg.DescribeTopicPartitionsRequest {
	r := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for range g.n(true) {
		t := kmsg.NewDescribeTopicPartitionsRequestTopic()
		t.Topic = g.str()
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	r.ResponsePartitionLimit = g.i32()
	if g.bool() {
		c := kmsg.NewDescribeTopicPartitionsRequestCursor()
		c.Topic, c.Partition = g.str(), g.i32()
		c.UnknownTags = g.tags()
		r.Cursor = &c
	}
	r.UnknownTags = g.tags()
	return r
}

func admDescribeTopicPartitionsRequestToKmsg(r *DescribeTopicPartitionsRequest, v int16) *kmsg.DescribeTopicPartitionsRequest {
	k := kmsg.NewPtrDescribeTopicPartitionsRequest()
	k.Version = v
	for _, name := range r.Topics {
		kt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		kt.Topic = name
		k.Topics = append(k.Topics, kt)
	}
	k.ResponsePartitionLimit = r.ResponsePartitionLimit
	if r.HasCursor {
		c := kmsg.NewDescribeTopicPartitionsRequestCursor()
		c.Topic, c.Partition = r.Cursor.Topic, r.Cursor.Partition
		k.Cursor = &c
	}
	return k
}

func TestDescribeTopicPartitionsRequestOracle(t *testing.T) {
	admRequestOracle(t, 75, describeTopicPartitionsMin, describeTopicPartitionsMax,
		admGenDescribeTopicPartitionsRequest, (*DescribeTopicPartitionsRequest).Decode, admDescribeTopicPartitionsRequestToKmsg)
}

// nullableInt32s returns null a third of the time, else an INT32 array.
func (g *oracleGen) nullableInt32s() []int32 {
	if g.r.IntN(3) == 0 {
		return nil
	}
	return g.int32s()
}

func admGenDescribeTopicPartitionsResponse(g *oracleGen, _ int16) *DescribeTopicPartitionsResponse {
	r := &DescribeTopicPartitionsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := DescribeTopicPartitionsResponseTopic{ErrorCode: g.code(), Topic: g.ns(), TopicID: g.uuid(), IsInternal: g.bool(), AuthorizedOperations: g.i32()}
		for range g.n(false) {
			t.Partitions = append(t.Partitions, DescribeTopicPartitionsResponsePartition{
				ErrorCode: g.code(), Partition: g.i32(), Leader: g.i32(), LeaderEpoch: g.i32(),
				Replicas: g.int32s(), ISR: g.int32s(), EligibleLeaderReplicas: g.nullableInt32s(), LastKnownELR: g.nullableInt32s(),
				OfflineReplicas: g.int32s(),
			})
		}
		r.Topics = append(r.Topics, t)
	}
	if g.bool() {
		r.HasNextCursor, r.NextCursor = true, DescribeTopicPartitionsCursor{Topic: g.str(), Partition: g.i32()}
	}
	return r
}

// admNullI32 copies s the way kmsg decodes a nullable []int32: null is nil,
// empty is empty.
func admNullI32(s []int32) []int32 {
	if s == nil {
		return nil
	}
	return append([]int32{}, s...)
}

func admDescribeTopicPartitionsResponseToKmsg(r *DescribeTopicPartitionsResponse) *kmsg.DescribeTopicPartitionsResponse {
	k := kmsg.NewPtrDescribeTopicPartitionsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		kt.ErrorCode, kt.Topic, kt.TopicID, kt.IsInternal = int16(t.ErrorCode), ptrOf(t.Topic), t.TopicID, t.IsInternal
		kt.AuthorizedOperations = t.AuthorizedOperations
		for _, p := range t.Partitions {
			kp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			kp.ErrorCode, kp.Partition, kp.LeaderID, kp.LeaderEpoch = int16(p.ErrorCode), p.Partition, p.Leader, p.LeaderEpoch
			kp.Replicas, kp.ISR, kp.OfflineReplicas = admI32(p.Replicas), admI32(p.ISR), admI32(p.OfflineReplicas)
			kp.EligibleLeaderReplicas, kp.LastKnownELR = admNullI32(p.EligibleLeaderReplicas), admNullI32(p.LastKnownELR)
			kt.Partitions = append(kt.Partitions, kp)
		}
		k.Topics = append(k.Topics, kt)
	}
	if r.HasNextCursor {
		c := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
		c.Topic, c.Partition = r.NextCursor.Topic, r.NextCursor.Partition
		k.NextCursor = &c
	}
	return k
}

func TestDescribeTopicPartitionsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1075, describeTopicPartitionsMin, describeTopicPartitionsMax,
		admGenDescribeTopicPartitionsResponse, (*DescribeTopicPartitionsResponse).AppendTo, admDescribeTopicPartitionsResponseToKmsg)
}

// TestDescribeTopicPartitionsRequestViews: the decoded names alias the
// frame (docs/design/style.md habit 5): overwriting it changes them.
func TestDescribeTopicPartitionsRequestViews(t *testing.T) {
	k := kmsg.NewPtrDescribeTopicPartitionsRequest()
	k.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "orders"}}
	k.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 3}
	body := k.AppendTo(nil)
	var r DescribeTopicPartitionsRequest
	if err := r.Decode(body, 0); err != nil || len(r.Topics) != 1 || r.Topics[0] != "orders" || !r.HasCursor ||
		r.Cursor != (DescribeTopicPartitionsCursor{"orders", 3}) || r.ResponsePartitionLimit != 2000 {
		t.Fatalf("decoded %+v, %v", r, err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if r.Topics[0] != "xxxxxx" || r.Cursor.Topic != "xxxxxx" {
		t.Fatalf("names are not views of the frame: %q %q", r.Topics[0], r.Cursor.Topic)
	}
}

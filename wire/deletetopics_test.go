package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenDeleteTopicsRequest(g *oracleGen, v int16) *kmsg.DeleteTopicsRequest {
	r := kmsg.NewPtrDeleteTopicsRequest()
	r.TimeoutMillis = g.i32()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		if v < 6 {
			r.TopicNames = append(r.TopicNames, g.str())
			continue
		}
		// v6 entries name a topic by name, by id, or (oddly) both.
		t := kmsg.NewDeleteTopicsRequestTopic()
		switch g.r.IntN(3) {
		case 0:
			t.Topic = g.ptr()
		case 1:
			t.TopicID = g.uuid()
		default:
			t.Topic, t.TopicID = g.ptr(), g.uuid()
		}
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admDeleteTopicsRequestToKmsg(r *DeleteTopicsRequest, v int16) *kmsg.DeleteTopicsRequest {
	k := kmsg.NewPtrDeleteTopicsRequest()
	k.Version = v
	k.TimeoutMillis = r.TimeoutMillis
	k.TopicNames = append(k.TopicNames, r.TopicNames...)
	for _, t := range r.Topics {
		kt := kmsg.NewDeleteTopicsRequestTopic()
		kt.Topic = ptrOf(t.Topic)
		kt.TopicID = t.TopicID
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestDeleteTopicsRequestOracle(t *testing.T) {
	admRequestOracle(t, 20, deleteTopicsMin, deleteTopicsMax,
		admGenDeleteTopicsRequest, (*DeleteTopicsRequest).Decode, admDeleteTopicsRequestToKmsg)
}

// TestDeleteTopicsRequestByNameAndID pins v6's two ways to name a topic and
// that switching versions on a reused struct clears the other list.
func TestDeleteTopicsRequestByNameAndID(t *testing.T) {
	id := [16]byte{0: 0xde, 15: 0xad}
	name := "orders"
	k := kmsg.NewPtrDeleteTopicsRequest()
	k.Version = 6
	k.TimeoutMillis = 1500
	k.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &name}, {TopicID: id}}
	var r DeleteTopicsRequest
	if err := r.Decode(k.AppendTo(nil), 6); err != nil {
		t.Fatal(err)
	}
	want := []DeleteTopicsRequestTopic{{Topic: NullStringOf("orders")}, {TopicID: id}}
	admCheckEqual(t, "v6 topics", r.Topics, want)
	if len(r.TopicNames) != 0 || r.TimeoutMillis != 1500 {
		t.Fatalf("v6 decoded %+v", r)
	}

	k5 := kmsg.NewPtrDeleteTopicsRequest()
	k5.Version = 5
	k5.TopicNames = []string{"a", "b"}
	if err := r.Decode(k5.AppendTo(nil), 5); err != nil {
		t.Fatal(err)
	}
	if len(r.Topics) != 0 || len(r.TopicNames) != 2 || r.TopicNames[1] != "b" {
		t.Fatalf("v5 after v6 decoded %+v", r)
	}
}

func admGenDeleteTopicsResponse(g *oracleGen, v int16) *DeleteTopicsResponse {
	r := &DeleteTopicsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := DeleteTopicsResponseTopic{
			Topic:        g.ns(),
			TopicID:      g.uuid(),
			ErrorCode:    ErrorCode(g.i16()),
			ErrorMessage: g.ns(),
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admDeleteTopicsResponseToKmsg(r *DeleteTopicsResponse) *kmsg.DeleteTopicsResponse {
	k := kmsg.NewPtrDeleteTopicsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewDeleteTopicsResponseTopic()
		kt.Topic = ptrOf(t.Topic)
		kt.TopicID = t.TopicID
		kt.ErrorCode = int16(t.ErrorCode)
		kt.ErrorMessage = ptrOf(t.ErrorMessage)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestDeleteTopicsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1020, deleteTopicsMin, deleteTopicsMax,
		admGenDeleteTopicsResponse, (*DeleteTopicsResponse).AppendTo, admDeleteTopicsResponseToKmsg)
}

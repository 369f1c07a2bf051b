package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenCreatePartitionsRequest(g *oracleGen, _ int16) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.TimeoutMillis = g.i32()
	r.ValidateOnly = g.bool()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic = g.str()
		t.Count = g.i32()
		switch g.r.IntN(3) {
		case 0: // null: assign automatically
		case 1:
			t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
		default:
			for range g.n(false) {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = g.int32s()
				a.UnknownTags = g.tags()
				t.Assignment = append(t.Assignment, a)
			}
		}
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admCreatePartitionsRequestToKmsg(r *CreatePartitionsRequest, v int16) *kmsg.CreatePartitionsRequest {
	k := kmsg.NewPtrCreatePartitionsRequest()
	k.Version = v
	k.TimeoutMillis = r.TimeoutMillis
	k.ValidateOnly = r.ValidateOnly
	for _, t := range r.Topics {
		kt := kmsg.NewCreatePartitionsRequestTopic()
		kt.Topic = t.Topic
		kt.Count = t.Count
		if t.Assignment != nil {
			kt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
		}
		for _, a := range t.Assignment {
			ka := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ka.Replicas = admI32(a.Replicas)
			kt.Assignment = append(kt.Assignment, ka)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestCreatePartitionsRequestOracle(t *testing.T) {
	admRequestOracle(t, 37, createPartitionsMin, createPartitionsMax,
		admGenCreatePartitionsRequest, (*CreatePartitionsRequest).Decode, admCreatePartitionsRequestToKmsg)
}

// TestCreatePartitionsNullAssignment pins null vs empty Assignments, also
// when a reused struct had assignments before.
func TestCreatePartitionsNullAssignment(t *testing.T) {
	for v := createPartitionsMin; v <= createPartitionsMax; v++ {
		var r CreatePartitionsRequest
		for _, assign := range [][]kmsg.CreatePartitionsRequestTopicAssignment{
			{{Replicas: []int32{1}}}, nil, {}, nil,
		} {
			k := kmsg.NewPtrCreatePartitionsRequest()
			k.Version = v
			k.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4, Assignment: assign}}
			if err := r.Decode(k.AppendTo(nil), v); err != nil {
				t.Fatal(err)
			}
			got := r.Topics[0].Assignment
			if (got == nil) != (assign == nil) || len(got) != len(assign) {
				t.Fatalf("v%d: Assignment %v decoded as %v (nil %v)", v, assign, got, got == nil)
			}
		}
	}
}

func admGenCreatePartitionsResponse(g *oracleGen, _ int16) *CreatePartitionsResponse {
	r := &CreatePartitionsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		r.Topics = append(r.Topics, CreatePartitionsResponseTopic{
			Topic: g.str(), ErrorCode: ErrorCode(g.i16()), ErrorMessage: g.ns(),
		})
	}
	return r
}

func admCreatePartitionsResponseToKmsg(r *CreatePartitionsResponse) *kmsg.CreatePartitionsResponse {
	k := kmsg.NewPtrCreatePartitionsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewCreatePartitionsResponseTopic()
		kt.Topic = t.Topic
		kt.ErrorCode = int16(t.ErrorCode)
		kt.ErrorMessage = ptrOf(t.ErrorMessage)
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestCreatePartitionsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1037, createPartitionsMin, createPartitionsMax,
		admGenCreatePartitionsResponse, (*CreatePartitionsResponse).AppendTo, admCreatePartitionsResponseToKmsg)
}

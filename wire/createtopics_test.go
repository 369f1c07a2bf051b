package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func admGenCreateTopicsRequest(g *oracleGen, _ int16) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.TimeoutMillis = g.i32()
	r.ValidateOnly = g.bool()
	r.UnknownTags = g.tags()
	for range g.n(true) {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = g.str()
		t.NumPartitions = g.i32()
		t.ReplicationFactor = g.i16()
		for range g.n(false) {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition = g.i32()
			a.Replicas = g.int32s()
			a.UnknownTags = g.tags()
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		for range g.n(false) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name = g.str()
			c.Value = g.ptr()
			c.UnknownTags = g.tags()
			t.Configs = append(t.Configs, c)
		}
		t.UnknownTags = g.tags()
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admCreateTopicsRequestToKmsg(r *CreateTopicsRequest, v int16) *kmsg.CreateTopicsRequest {
	k := kmsg.NewPtrCreateTopicsRequest()
	k.Version = v
	k.TimeoutMillis = r.TimeoutMillis
	k.ValidateOnly = r.ValidateOnly
	for _, t := range r.Topics {
		kt := kmsg.NewCreateTopicsRequestTopic()
		kt.Topic = t.Topic
		kt.NumPartitions = t.NumPartitions
		kt.ReplicationFactor = t.ReplicationFactor
		for _, a := range t.ReplicaAssignment {
			ka := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ka.Partition = a.Partition
			ka.Replicas = admI32(a.Replicas)
			kt.ReplicaAssignment = append(kt.ReplicaAssignment, ka)
		}
		for _, c := range t.Configs {
			kc := kmsg.NewCreateTopicsRequestTopicConfig()
			kc.Name = c.Name
			kc.Value = ptrOf(c.Value)
			kt.Configs = append(kt.Configs, kc)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestCreateTopicsRequestOracle(t *testing.T) {
	admRequestOracle(t, 19, createTopicsMin, createTopicsMax,
		admGenCreateTopicsRequest, (*CreateTopicsRequest).Decode, admCreateTopicsRequestToKmsg)
}

func admGenCreateTopicsResponse(g *oracleGen, _ int16) *CreateTopicsResponse {
	r := &CreateTopicsResponse{ThrottleMillis: g.i32()}
	for range g.n(true) {
		t := CreateTopicsResponseTopic{
			Topic:             g.str(),
			TopicID:           g.uuid(),
			ErrorCode:         ErrorCode(g.i16()),
			ErrorMessage:      g.ns(),
			NumPartitions:     g.i32(),
			ReplicationFactor: g.i16(),
		}
		if g.bool() {
			t.ConfigErrorCode = ErrorCode(g.i16())
		}
		switch g.r.IntN(4) {
		case 0: // null
		case 1:
			t.Configs = []CreateTopicsResponseTopicConfig{}
		default:
			for range g.n(false) {
				t.Configs = append(t.Configs, CreateTopicsResponseTopicConfig{
					Name: g.str(), Value: g.ns(), ReadOnly: g.bool(), Source: ConfigSource(g.i8()), IsSensitive: g.bool(),
				})
			}
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func admCreateTopicsResponseToKmsg(r *CreateTopicsResponse) *kmsg.CreateTopicsResponse {
	k := kmsg.NewPtrCreateTopicsResponse()
	k.ThrottleMillis = r.ThrottleMillis
	for _, t := range r.Topics {
		kt := kmsg.NewCreateTopicsResponseTopic()
		kt.Topic = t.Topic
		kt.TopicID = t.TopicID
		kt.ErrorCode = int16(t.ErrorCode)
		kt.ErrorMessage = ptrOf(t.ErrorMessage)
		kt.ConfigErrorCode = int16(t.ConfigErrorCode)
		kt.NumPartitions = t.NumPartitions
		kt.ReplicationFactor = t.ReplicationFactor
		if t.Configs != nil {
			kt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
		for _, c := range t.Configs {
			kc := kmsg.NewCreateTopicsResponseTopicConfig()
			kc.Name = c.Name
			kc.Value = ptrOf(c.Value)
			kc.ReadOnly = c.ReadOnly
			kc.Source = int8(c.Source)
			kc.IsSensitive = c.IsSensitive
			kt.Configs = append(kt.Configs, kc)
		}
		k.Topics = append(k.Topics, kt)
	}
	return k
}

func TestCreateTopicsResponseOracle(t *testing.T) {
	admResponseOracle(t, 1019, createTopicsMin, createTopicsMax,
		admGenCreateTopicsResponse, (*CreateTopicsResponse).AppendTo, admCreateTopicsResponseToKmsg)
}

// TestCreateTopicsResponseConfigErrorTag pins the tagged field: written as
// tag 0 only when non-zero, decoded by kmsg into ConfigErrorCode, and null
// Configs next to it.
func TestCreateTopicsResponseConfigErrorTag(t *testing.T) {
	r := CreateTopicsResponse{Topics: []CreateTopicsResponseTopic{{
		Topic: "t", ErrorCode: NoError, ConfigErrorCode: TopicAuthorizationFailed, NumPartitions: 3, ReplicationFactor: 1,
	}}}
	for v := int16(5); v <= createTopicsMax; v++ {
		b := r.AppendTo(nil, v)
		// ... Configs null (0x00), then tags: count 1, tag 0, size 2, code 29, then the body's empty tags.
		if tail := []byte{0, 1, 0, 2, 0, 29, 0}; !bytes.HasSuffix(b, tail) {
			t.Fatalf("v%d: body %x does not end in %x", v, b, tail)
		}
		k, err := admKmsgDecode[kmsg.CreateTopicsResponse](b, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Topics[0]; got.ConfigErrorCode != 29 || got.Configs != nil {
			t.Fatalf("v%d: kmsg read ConfigErrorCode %d, Configs %v", v, got.ConfigErrorCode, got.Configs)
		}
		r2 := r
		r2.Topics = []CreateTopicsResponseTopic{r.Topics[0]}
		r2.Topics[0].ConfigErrorCode = NoError
		r2.Topics[0].Configs = []CreateTopicsResponseTopicConfig{}
		if tail := []byte{1, 0, 0}; !bytes.HasSuffix(r2.AppendTo(nil, v), tail) {
			t.Fatalf("v%d: zero ConfigErrorCode must not be written", v)
		}
	}
}

// TestCreateTopicsRequestViews checks that decoded strings alias the body
// (docs/design/style.md habit 5): overwriting the frame changes them, so they are valid
// only until the frame is released.
func TestCreateTopicsRequestViews(t *testing.T) {
	k := kmsg.NewPtrCreateTopicsRequest()
	k.Version = 7
	v := "delete"
	k.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "orders", NumPartitions: 3, ReplicationFactor: 1,
		Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "cleanup.policy", Value: &v}}}}
	body := k.AppendTo(nil)
	var r CreateTopicsRequest
	if err := r.Decode(body, 7); err != nil {
		t.Fatal(err)
	}
	if r.Topics[0].Topic != "orders" || r.Topics[0].Configs[0].Value != NullStringOf("delete") {
		t.Fatalf("decoded %+v", r.Topics[0])
	}
	for i := range body {
		body[i] = 'X'
	}
	if r.Topics[0].Topic != "XXXXXX" || r.Topics[0].Configs[0].Name != "XXXXXXXXXXXXXX" || r.Topics[0].Configs[0].Value.S != "XXXXXX" {
		t.Fatalf("strings are copies, not views: %+v", r.Topics[0])
	}
}

// TestCreateTopicsRequestMalformed covers inputs kmsg's reader is lenient
// about but Kafka rejects, and counts that cannot fit.
func TestCreateTopicsRequestMalformed(t *testing.T) {
	cases := []struct {
		name string
		v    int16
		body []byte
		want error
	}{
		{"null topics array v4", 4, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0}, ErrNegativeLength},
		{"null topics array v5", 5, []byte{0, 0, 0, 0, 0, 0, 0}, ErrNegativeLength},
		{"huge topic count v4", 4, []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0}, ErrTooMany},
		{"huge topic count v5", 5, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0, 0}, ErrTooMany},
		// One topic with a null name (compact length 0).
		{"null topic name v5", 5, []byte{2, 0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}, ErrNegativeLength},
		{"over-long varint v5", 5, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, ErrVarint},
		{"empty body", 2, nil, ErrShort},
		{"unsupported version", 1, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrUnsupportedVersion},
	}
	for _, c := range cases {
		var r CreateTopicsRequest
		if err := r.Decode(c.body, c.v); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

//go:build !race

package wire

import "testing"

// Zero allocations is a failing test (docs/design/style.md habit 7). The race detector
// allocates, hence the build tag.

type prodAllocCase struct {
	name string
	fn   func()
}

func TestProduceSideZeroAllocs(t *testing.T) {
	var sink int

	// Decoding into reused structs, after one warm-up decode each.
	body, v := prodBenchProduceRequest()
	h := RequestHeader{APIKey: KeyProduce, APIVersion: v, CorrelationID: 7, ClientID: NullStringOf("producer-1")}
	frame := append(AppendRequestHeader(nil, h), body...)
	var req ProduceRequest
	apiBody := (&APIVersionsRequest{ClientSoftwareName: "apache-kafka-java", ClientSoftwareVersion: "4.0.0"}).AppendTo(nil, 4)
	var apiReq APIVersionsRequest
	metaBody := (&MetadataRequest{Topics: []MetadataRequestTopic{{Name: NullStringOf("a")}, {Name: NullStringOf("b")}}, AllowAutoTopicCreation: true}).AppendTo(nil, 12)
	var metaReq MetadataRequest
	ipBody := (&InitProducerIDRequest{TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1}).AppendTo(nil, 5)
	var ipReq InitProducerIDRequest
	if err := req.Decode(body, v); err != nil {
		t.Fatal(err)
	}
	if err := metaReq.Decode(metaBody, 12); err != nil {
		t.Fatal(err)
	}

	// Encoding into a reused buffer.
	buf := make([]byte, 0, 64<<10)
	produceResp := prodBenchProduceResponse()
	metaResp := prodBenchMetadataResponse()
	apiResp := &APIVersionsResponse{}
	for _, a := range APIs {
		apiResp.APIKeys = append(apiResp.APIKeys, APIVersionsKey{a.Key, a.Min, a.Max})
	}
	ipResp := &InitProducerIDResponse{ProducerID: 1, ProducerEpoch: 0}
	encode := func(name string, fn func([]byte) []byte) prodAllocCase {
		return prodAllocCase{name, func() { buf = fn(buf[:0]); sink += len(buf) }}
	}

	cases := []prodAllocCase{
		{"ParseRequestHeader+ProduceRequest.Decode", func() {
			h, b, err := ParseRequestHeader(frame)
			if err != nil || req.Decode(b, h.APIVersion) != nil {
				t.Fatal("decode failed")
			}
			sink += len(req.Topics)
		}},
		{"ApiVersions, Metadata, InitProducerId request decodes", func() {
			if apiReq.Decode(apiBody, 4) != nil || metaReq.Decode(metaBody, 12) != nil || ipReq.Decode(ipBody, 5) != nil {
				t.Fatal("decode failed")
			}
			sink += len(metaReq.Topics)
		}},
		{"ValidClientSoftware", func() {
			if !ValidClientSoftware(apiReq.ClientSoftwareName) || !apiReq.Valid(4) {
				t.Fatal("invalid")
			}
		}},
		encode("ProduceResponse v12 with header", func(b []byte) []byte {
			b = AppendResponseHeader(b, KeyProduce, 12, 7)
			return produceResp.AppendTo(b, 12)
		}),
		encode("ProduceResponse v8", func(b []byte) []byte { return produceResp.AppendTo(b, 8) }),
		encode("MetadataResponse v12", func(b []byte) []byte { return metaResp.AppendTo(b, 12) }),
		encode("MetadataResponse v1", func(b []byte) []byte { return metaResp.AppendTo(b, 1) }),
		encode("ApiVersionsResponse v4 with header", func(b []byte) []byte {
			b = AppendResponseHeader(b, KeyAPIVersions, 4, 7)
			return apiResp.AppendTo(b, 4)
		}),
		encode("ApiVersionsResponse v0", func(b []byte) []byte { return apiResp.AppendTo(b, 0) }),
		encode("AppendAPIVersionsUnsupported", func(b []byte) []byte { return AppendAPIVersionsUnsupported(b, 0, 4) }),
		encode("InitProducerIDResponse v5", func(b []byte) []byte { return ipResp.AppendTo(b, 5) }),
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(200, c.fn); n != 0 {
			t.Errorf("%s: %v allocs/op, want 0", c.name, n)
		}
	}
	_ = sink
}

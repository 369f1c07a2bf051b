package bridge

import (
	"runtime"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/wire"
)

// state is the scratch space one request is served with: decoded requests,
// responses and buffers, reused across requests through Gateway.states so
// the steady state allocates nothing. A state belongs to one call at a time.
type state struct {
	call call

	apiVersionsReq  wire.APIVersionsRequest
	apiVersionsResp wire.APIVersionsResponse
	metadataReq     wire.MetadataRequest
	metadataResp    wire.MetadataResponse
	initPIDReq      wire.InitProducerIDRequest
	produceReq      wire.ProduceRequest
	produceResp     wire.ProduceResponse
	// produceIDCodes[i] is produceReq.Topics[i]'s error from its v13 id
	// (produceTopicNames).
	produceIDCodes []wire.ErrorCode

	batch   message.Batch
	encoder mapping.Encoder
	stamp   mapping.Producer
	headers []mapping.Header
	int32s  []int32

	fetch           fetchState
	listOffsetsReq  wire.ListOffsetsRequest
	listOffsetsResp wire.ListOffsetsResponse
	admin           adminState
	deleteRecords   deleteRecordsState
	group           groupState
	fanout          produceFanout
	deadline        deadlineCtx // a Produce's deadline (deadline.go)
}

// Retention bounds for pooled scratch space: a state that served an unusually
// large request gives its big buffers back to the garbage collector instead
// of keeping them in the pool.
const (
	maxRetainedBatch   = 4 << 20
	maxRetainedEntries = 1024
)

// trim drops scratch space grown beyond the retention bounds.
func (st *state) trim() {
	if cap(st.batch.Buf) > maxRetainedBatch {
		st.batch = message.Batch{}
	}
	if cap(st.produceReq.Topics) > maxRetainedEntries {
		st.produceReq = wire.ProduceRequest{}
		st.produceIDCodes = nil
	}
	for i := range st.produceReq.Topics {
		if cap(st.produceReq.Topics[i].Partitions) > maxRetainedEntries {
			st.produceReq = wire.ProduceRequest{}
			break
		}
	}
	if cap(st.produceResp.Topics) > maxRetainedEntries {
		st.produceResp = wire.ProduceResponse{}
	}
	if cap(st.metadataReq.Topics) > maxRetainedEntries || cap(st.metadataResp.Topics) > maxRetainedEntries {
		st.metadataReq, st.metadataResp = wire.MetadataRequest{}, wire.MetadataResponse{}
	}
	if cap(st.headers) > maxRetainedEntries {
		st.headers = nil
	}
	st.fanout.trim()
	st.fetch.trim()
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

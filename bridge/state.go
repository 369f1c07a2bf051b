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

	apiVersionsReq  wire.ApiVersionsRequest
	apiVersionsResp wire.ApiVersionsResponse
	metadataReq     wire.MetadataRequest
	metadataResp    wire.MetadataResponse
	initPIDReq      wire.InitProducerIDRequest
	produceReq      wire.ProduceRequest
	produceResp     wire.ProduceResponse

	batch   message.Batch
	encoder mapping.Encoder
	headers []mapping.Header
	int32s  []int32

	more moreState
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

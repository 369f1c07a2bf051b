package bridge

import "github.com/kiggy-io/kiggy/wire"

// moreState holds the scratch space of the consume-side and admin handlers.
type moreState struct {
	fetch           fetchState
	listOffsetsReq  wire.ListOffsetsRequest
	listOffsetsResp wire.ListOffsetsResponse
}

// registerMore installs the consume-side and admin handlers.
func (g *Gateway) registerMore() {
	g.handlers[wire.KeyFetch] = (*Gateway).fetch
	g.handlers[wire.KeyListOffsets] = (*Gateway).listOffsets
}

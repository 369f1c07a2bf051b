// ListTransactions (API key 66): versions 0–2 (wire.APIs), KIP-664;
// v1 adds the duration filter (KIP-994), v2 the transactional id pattern
// (KIP-1152), matched with Go's RE2, the syntax Kafka's RE2/J implements.

package bridge

import (
	"regexp"
	"slices"
	"time"

	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyListTransactions, (*Gateway).listTransactions) }

// listTransactions answers ListTransactions
// (TransactionStateManager.listTransactionStates): the ids the principal
// may DESCRIBE, filtered by state (an unknown state name is listed in
// UnknownStateFilters and matches nothing), producer id, open for at least
// the duration (v1+), and id pattern (v2+; a pattern that does not compile
// is INVALID_REQUEST).
func (g *Gateway) listTransactions(c *call) bool {
	var req wire.ListTransactionsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	resp := wire.ListTransactionsResponse{ErrorCode: g.txnCode()}
	var pattern *regexp.Regexp
	if resp.ErrorCode == wire.NoError && req.TransactionalIDPattern.Valid && req.TransactionalIDPattern.S != "" {
		var err error
		if pattern, err = regexp.Compile(req.TransactionalIDPattern.S); err != nil {
			resp.ErrorCode = wire.InvalidRequest
		}
	}
	var states []txn.State
	for _, name := range req.StateFilters {
		if s, ok := txn.ParseState(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if resp.ErrorCode == wire.NoError && (len(req.StateFilters) == 0 || len(states) > 0) {
		now := time.Now().UnixMilli()
		for _, t := range g.txn.List() {
			switch {
			case len(states) > 0 && !slices.Contains(states, t.State):
			case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
			case req.DurationFilterMillis >= 0 && (t.State != txn.Ongoing || now-t.StartMs < req.DurationFilterMillis):
			case pattern != nil && !pattern.MatchString(t.ID):
			case !g.allowed(c, acl.OpDescribe, acl.ResourceTransactionalID, t.ID):
			default:
				resp.TransactionStates = append(resp.TransactionStates, wire.ListTransactionsState{
					TransactionalID: t.ID, ProducerID: t.ProducerID, TransactionState: t.State.String()})
			}
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

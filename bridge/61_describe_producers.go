// DescribeProducers (API key 61): version 0 (wire.APIs), KIP-664.
//
// Differs from Kafka: CurrentTxnStartOffset is the open transaction's first
// offset as the coordinator knows it, the partition's high watermark when
// it joined the transaction (docs/design/transactions.md §3).

package bridge

import (
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeProducers, (*Gateway).describeProducers) }

// describeProducers answers DescribeProducers v0 (KIP-664) from the
// partitions' producer windows, rebuilt from the log tail first when this
// gateway has not appended to the partition yet, so
// `kafka-transactions --describe-producers` shows the same state after a
// restart. Like ReplicaManager.activeProducerState: an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION. A producer with a transaction
// open in the partition has its coordinator epoch (0) and the
// transaction's first offset; the others -1.
func (g *Gateway) describeProducers(c *call) bool {
	var req wire.DescribeProducersRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeProducersResponse
	for _, t := range req.Topics {
		out := wire.DescribeProducersResponseTopic{Topic: t.Topic}
		info, terr := g.store.Topic(g.ctx, t.Topic)
		denied := g.topicCode(c, acl.OpRead, t.Topic) // KafkaApis: READ on the topic
		for _, p := range t.Partitions {
			rp := wire.DescribeProducersResponsePartition{Partition: p}
			switch {
			case denied != wire.NoError:
				rp.ErrorCode = denied
			case terr != nil || p < 0 || p >= info.Partitions:
				code := wire.UnknownTopicOrPartition
				if terr != nil && !errors.Is(terr, store.ErrUnknownTopic) {
					code = logCode(terr)
				}
				rp.ErrorCode = code
			default:
				var err error
				rp.ActiveProducers, err = g.activeProducers(t.Topic, p)
				if err != nil {
					rp.ErrorCode = logCode(err)
				}
			}
			if rp.ErrorCode != wire.NoError {
				rp.ErrorMessage = wire.NullStringOf(rp.ErrorCode.String())
			}
			out.Partitions = append(out.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, out)
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// activeProducers lists one partition's producers, by producer id.
func (g *Gateway) activeProducers(topic string, p int32) ([]wire.DescribeProducersActiveProducer, error) {
	pp := g.producers.partition(topic, p)
	pp.Lock()
	defer pp.Unlock()
	if !pp.Loaded() {
		if err := g.rebuildProducers(topic, p, pp); err != nil {
			return nil, err
		}
	}
	active := pp.Active()
	for i := range active {
		a := &active[i]
		if first, ok := g.txn.Index.OpenFirst(topic, p, a.ProducerID); ok {
			a.CoordinatorEpoch, a.CurrentTxnStartOffset = 0, first
		}
	}
	return active, nil
}

// CreatePartitions (API key 37): versions 0–3 (wire.APIs).
//
// Grow only, as Kafka, at most maxPartitionsPerRequest added in one request.
// Differs from Kafka: an assignment must name this broker alone for every
// new partition; the partitions added count against --max-partitions
// (creationlimits.go).

package bridge

import (
	"errors"
	"slices"
	"strconv"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyCreatePartitions, (*Gateway).createPartitions) }

// createPartitions answers CreatePartitions v0–3: grow only.
func (g *Gateway) createPartitions(c *call) bool {
	as := &c.state.admin
	req := &as.partsReq
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.CreatePartitionsResponse
	mq := g.mutationQuotaFor(c, 3) // THROTTLING_QUOTA_EXCEEDED from v3 (KIP-599)
	dups := duplicates(len(req.Topics), func(i int) string { return req.Topics[i].Topic })
	codes := make([]wire.ErrorCode, len(req.Topics))
	infos := make([]store.TopicInfo, len(req.Topics))
	lookups := make([]error, len(req.Topics))
	var added int64 // what the request adds to topics that exist
	for i, t := range req.Topics {
		if slices.Contains(dups, t.Topic) {
			continue
		}
		if codes[i] = g.topicCode(c, acl.OpAlter, t.Topic); codes[i] == wire.NoError { // KafkaApis: ALTER on the topic
			infos[i], lookups[i] = g.store.Topic(g.ctx, t.Topic)
			if lookups[i] == nil && t.Count > infos[i].Partitions {
				added += int64(t.Count - infos[i].Partitions)
			}
		}
	}
	for i, t := range req.Topics {
		if slices.Contains(dups, t.Topic) {
			continue
		}
		out := wire.CreatePartitionsResponseTopic{Topic: t.Topic}
		code, msg := codes[i], "Authorization failed."
		switch {
		case code != wire.NoError:
		case added > maxPartitionsPerRequest:
			// Kafka 4.4's controller refuses the whole request (every
			// topic it was sent, those that do not exist too) past
			// MAX_PARTITIONS_PER_BATCH added partitions.
			code, msg = wire.PolicyViolation, "Excessively large number of additional partitions per request."
		default:
			code, msg = g.growTopic(t, infos[i], lookups[i], req.ValidateOnly, &mq)
		}
		out.ErrorCode = code
		if msg != "" {
			out.ErrorMessage = wire.NullStringOf(msg)
		}
		resp.Topics = append(resp.Topics, out)
	}
	for _, name := range dups {
		resp.Topics = append(resp.Topics, wire.CreatePartitionsResponseTopic{Topic: name, ErrorCode: wire.InvalidRequest,
			ErrorMessage: wire.NullStringOf(duplicateTopic)})
	}
	mq.finish(c)
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// growTopic adds partitions to t.Topic up to t.Count, charging the
// partitions added to mq after every other check; info and err are the
// topic's lookup.
func (g *Gateway) growTopic(t wire.CreatePartitionsRequestTopic, info store.TopicInfo, err error, validateOnly bool, mq *mutationQuota) (wire.ErrorCode, string) {
	if errors.Is(err, store.ErrUnknownTopic) {
		return wire.UnknownTopicOrPartition, "The topic '" + t.Topic + "' does not exist."
	} else if err != nil {
		return wire.UnknownServerError, err.Error()
	}
	if t.Count <= info.Partitions {
		// Kafka 4.4's wording (ReplicationControlManager).
		return wire.InvalidPartitions, "The topic " + t.Topic + " currently has " + strconv.Itoa(int(info.Partitions)) + " partition(s); " + strconv.Itoa(int(t.Count)) + " would not be an increase."
	}
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != t.Count-info.Partitions {
			return wire.InvalidReplicaAssignment, "The assignment must list every new partition."
		}
		for _, a := range t.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != g.cfg.NodeID {
				return wire.InvalidReplicaAssignment, "Every partition must be assigned to broker " + strconv.Itoa(int(g.cfg.NodeID)) + " alone."
			}
		}
	}
	added := t.Count - info.Partitions
	if validateOnly {
		if !g.creation.fits(g.ctx, g.store, added) {
			return wire.PolicyViolation, g.creation.refusal(added)
		}
		return wire.NoError, ""
	}
	held, ok := g.creation.reserve(g.ctx, g.store, t.Topic, info.Partitions, t.Count)
	if !ok {
		return wire.PolicyViolation, g.creation.refusal(added)
	}
	if mq.on() && !mq.admit(added) {
		g.creation.release(held)
		return wire.ThrottlingQuotaExceeded, mutationRefused
	}
	err = g.store.CreatePartitions(g.ctx, t.Topic, t.Count)
	g.creation.end(held, err)
	if err != nil {
		if errors.Is(err, store.ErrInvalidPartitions) {
			return wire.InvalidPartitions, err.Error()
		}
		return wire.UnknownServerError, err.Error()
	}
	g.noticeStateChange() // the others list the topics at once
	return wire.NoError, ""
}

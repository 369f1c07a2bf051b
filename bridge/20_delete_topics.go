// DeleteTopics (API key 20): versions 1–6 (wire.APIs).
//
// v6 deletes by name or by topic id (KIP-516; the ids are the backend's,
// docs/design/record-mapping.md §8). Differs from Kafka: an entry with both
// a name and an id is answered INVALID_REQUEST alone, where Kafka refuses
// the whole request.

package bridge

import (
	"errors"
	"slices"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDeleteTopics, (*Gateway).deleteTopics) }

// deleteTopics answers DeleteTopics v1–6, by name or (v6) by topic id.
func (g *Gateway) deleteTopics(c *call) bool {
	as := &c.state.admin
	req := &as.deleteReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	var resp wire.DeleteTopicsResponse
	mq := g.mutationQuotaFor(c, 5) // THROTTLING_QUOTA_EXCEEDED from v5 (KIP-599)
	del := func(name string) (wire.ErrorCode, string) {
		if code := g.topicCode(c, acl.OpDelete, name); code != wire.NoError { // KafkaApis: DELETE on the topic
			return code, "Authorization failed."
		}
		if mq.on() {
			// Charged with the partitions deleted, once the topic is
			// known to exist (ReplicationControlManager.deleteTopic).
			info, err := g.store.Topic(g.ctx, name)
			if err == nil && !mq.admit(info.Partitions) {
				return wire.ThrottlingQuotaExceeded, mutationRefused
			}
		}
		err := g.store.DeleteTopic(g.ctx, name)
		if err == nil || errors.Is(err, store.ErrUnknownTopic) {
			g.topicIDs.forget(name) // its id names no topic now (topicids.go)
		}
		switch {
		case err == nil:
			g.creation.stale() // its partitions make room (creationlimits.go)
			// A topic of the same name created later starts with no
			// producer state.
			g.producers.dropTopic(name)
			if err := g.txn.DropTopic(g.ctx, name); err != nil {
				g.cfg.Logger.Warn("delete topic: forgetting its aborted transactions failed", "topic", name, "err", err)
			}
			// Its configs and log starts go with it.
			if err := g.dropTopicState(g.ctx, name); err != nil {
				return wire.UnknownServerError, "the topic is deleted, but not its configs: " + err.Error()
			}
			return wire.NoError, ""
		case errors.Is(err, store.ErrUnknownTopic):
			return wire.UnknownTopicOrPartition, "This server does not host this topic-partition."
		case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnknownOutcome):
			return wire.RequestTimedOut, err.Error()
		default:
			return wire.UnknownServerError, err.Error()
		}
	}
	if v >= 6 {
		// A name (or an id) named twice is answered once at the end
		// (ControllerApis.deleteTopics).
		byName := func(t *wire.DeleteTopicsRequestTopic) bool { return t.Topic.Valid && t.TopicID == [16]byte{} }
		byID := func(t *wire.DeleteTopicsRequestTopic) bool { return !t.Topic.Valid && t.TopicID != [16]byte{} }
		var names []string
		var ids [][16]byte
		for i := range req.Topics {
			if t := &req.Topics[i]; byName(t) {
				names = append(names, t.Topic.S)
			} else if byID(t) {
				ids = append(ids, t.TopicID)
			}
		}
		dupNames := duplicates(len(names), func(i int) string { return names[i] })
		dupIDs := duplicates(len(ids), func(i int) [16]byte { return ids[i] })
		for i := range req.Topics {
			t := &req.Topics[i]
			if (byName(t) && slices.Contains(dupNames, t.Topic.S)) || (byID(t) && slices.Contains(dupIDs, t.TopicID)) {
				continue
			}
			out := wire.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
			var m string
			switch byID := t.TopicID != ([16]byte{}); {
			case byID && t.Topic.Valid:
				// ControllerApis: "Topic name and topic ID can not both be specified."
				out.ErrorCode, m = wire.InvalidRequest, "Topic name and topic ID can not both be specified."
			case byID:
				out.ErrorCode, m = g.deleteTopicByID(c, &out, del)
			case !t.Topic.Valid:
				out.ErrorCode = wire.UnknownTopicID
			default:
				out.ErrorCode, m = del(t.Topic.S)
			}
			if m != "" {
				out.ErrorMessage = wire.NullStringOf(m)
			}
			resp.Topics = append(resp.Topics, out)
		}
		for _, name := range dupNames {
			resp.Topics = append(resp.Topics, wire.DeleteTopicsResponseTopic{Topic: wire.NullStringOf(name),
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(duplicateTopic)})
		}
		for _, id := range dupIDs {
			resp.Topics = append(resp.Topics, wire.DeleteTopicsResponseTopic{TopicID: id,
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(duplicateTopicID)})
		}
	} else {
		dups := duplicates(len(req.TopicNames), func(i int) string { return req.TopicNames[i] })
		for _, name := range req.TopicNames {
			if slices.Contains(dups, name) {
				continue
			}
			code, m := del(name)
			out := wire.DeleteTopicsResponseTopic{Topic: wire.NullStringOf(name), ErrorCode: code}
			if m != "" {
				out.ErrorMessage = wire.NullStringOf(m)
			}
			resp.Topics = append(resp.Topics, out)
		}
		for _, name := range dups {
			// v1–4 have no message: the code alone.
			resp.Topics = append(resp.Topics, wire.DeleteTopicsResponseTopic{Topic: wire.NullStringOf(name),
				ErrorCode: wire.InvalidRequest, ErrorMessage: wire.NullStringOf(duplicateTopic)})
		}
	}
	mq.finish(c)
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// deleteTopicByID deletes the topic out.TopicID names with del, and names it
// in out when the principal may DESCRIBE it (ControllerApis.deleteTopics: an
// unknown id is UNKNOWN_TOPIC_ID, a topic it may not describe
// TOPIC_AUTHORIZATION_FAILED without its name).
func (g *Gateway) deleteTopicByID(c *call, out *wire.DeleteTopicsResponseTopic, del func(string) (wire.ErrorCode, string)) (wire.ErrorCode, string) {
	info, err := g.topicByID(out.TopicID)
	switch {
	case errors.Is(err, store.ErrUnknownTopic):
		return wire.UnknownTopicID, "This server does not host this topic ID."
	case err != nil:
		return wire.RequestTimedOut, err.Error()
	case !g.allowed(c, acl.OpDescribe, acl.ResourceTopic, info.Name):
		return wire.TopicAuthorizationFailed, "Authorization failed."
	}
	out.Topic = wire.NullStringOf(info.Name)
	return del(info.Name)
}

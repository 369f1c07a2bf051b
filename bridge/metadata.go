package bridge

import (
	"errors"
	"net"
	"strconv"

	"github.com/kiggy-io/kiggy/wire"
)

// authorizedOperationsUnknown is Kafka's "not computed" value for
// TopicAuthorizedOperations (-2147483648).
const authorizedOperationsUnknown = -2147483648

// advertised returns the host and port clients should dial: the configured
// ones, or the address this connection reached.
func (g *Gateway) advertisedAddr(c *call) (string, int32) {
	host, port := g.cfg.AdvertisedHost, g.cfg.AdvertisedPort
	if host != "" && port != 0 {
		return host, port
	}
	h, p, err := net.SplitHostPort(c.req.Conn().LocalAddr)
	if err == nil {
		if host == "" {
			host = h
		}
		if port == 0 {
			n, _ := strconv.Atoi(p)
			port = int32(n)
		}
	}
	return host, port
}

// metadata answers Metadata v0–13 (docs/design/kafka-protocol.md §2.4): this gateway is
// the only broker, the controller, and leader, replica and ISR of every
// partition. Topic ids are zero, so clients use name-based versions.
func (g *Gateway) metadata(c *call) bool {
	st := c.state
	req := &st.metadataReq
	v := c.hdr.APIVersion
	if !decodeOrClose(c, req) {
		return false
	}
	host, port := g.advertisedAddr(c)
	resp := &st.metadataResp
	brokers := resp.Brokers[:0]
	brokers = append(brokers, wire.MetadataResponseBroker{NodeID: g.cfg.NodeID, Host: host, Port: port})
	*resp = wire.MetadataResponse{
		Brokers:                     brokers,
		ClusterID:                   wire.NullStringOf(g.cfg.ClusterID),
		ControllerID:                g.cfg.NodeID,
		Topics:                      resp.Topics[:0],
		ClusterAuthorizedOperations: authorizedOperationsUnknown,
	}
	st.int32s = append(st.int32s[:0], g.cfg.NodeID)
	node := st.int32s[:1:1]

	// v0: an empty array means all topics; v1+: null means all topics and
	// empty means none (Admin and librdkafka use "none" to learn brokers).
	all := req.Topics == nil || (v == 0 && len(req.Topics) == 0)
	ctx := g.ctx
	if all {
		topics, err := g.store.Topics(ctx)
		if err != nil {
			g.cfg.Logger.Warn("metadata: listing topics", "err", err)
		}
		for _, t := range topics {
			resp.Topics = g.appendTopic(resp.Topics, t.Name, t.Partitions, wire.NoError, node)
		}
	} else {
		// AllowAutoTopicCreation exists from v4; earlier versions auto-create.
		allowCreate := !g.cfg.NoAutoCreateTopics && (v < 4 || req.AllowAutoTopicCreation)
		for i := range req.Topics {
			rt := &req.Topics[i]
			if !rt.Name.Valid {
				// v12+: lookup by topic id. kiggy serves zero ids only.
				resp.Topics = append(resp.Topics, wire.MetadataResponseTopic{
					ErrorCode: wire.UnknownTopicID, TopicID: rt.TopicID,
					TopicAuthorizedOperations: authorizedOperationsUnknown,
				})
				continue
			}
			name := rt.Name.S
			if !validTopicName(name) {
				resp.Topics = g.appendTopic(resp.Topics, name, 0, wire.InvalidTopicException, node)
				continue
			}
			info, err := g.store.Topic(ctx, name)
			if errors.Is(err, ErrUnknownTopic) && allowCreate {
				info, err = g.store.CreateTopic(ctx, name, g.cfg.DefaultPartitions, TopicConfig{})
				if err == nil {
					// A new topic has the defaults and log start 0, whatever an
					// earlier one of the name left in the system store
					// (topicstate.go).
					_ = g.dropTopicState(ctx, name)
				}
				if errors.Is(err, ErrTopicExists) {
					info, err = g.store.Topic(ctx, name)
				}
			}
			switch {
			case err == nil:
				resp.Topics = g.appendTopic(resp.Topics, name, info.Partitions, wire.NoError, node)
			case errors.Is(err, ErrUnknownTopic):
				resp.Topics = g.appendTopic(resp.Topics, name, 0, wire.UnknownTopicOrPartition, node)
			default:
				g.cfg.Logger.Warn("metadata: topic lookup", "topic", name, "err", err)
				resp.Topics = g.appendTopic(resp.Topics, name, 0, wire.LeaderNotAvailable, node)
			}
		}
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, resp)
	return false
}

// appendTopic appends one topic with n partitions led by this node, reusing
// the partition slice already in dst's spare capacity.
func (g *Gateway) appendTopic(dst []wire.MetadataResponseTopic, name string, n int32, code wire.ErrorCode, node []int32) []wire.MetadataResponseTopic {
	var parts []wire.MetadataResponsePartition
	if len(dst) < cap(dst) {
		parts = dst[:len(dst)+1][len(dst)].Partitions[:0]
	}
	for p := int32(0); p < n; p++ {
		parts = append(parts, wire.MetadataResponsePartition{
			PartitionIndex:  p,
			LeaderID:        g.cfg.NodeID,
			LeaderEpoch:     -1,
			ReplicaNodes:    node,
			IsrNodes:        node,
			OfflineReplicas: node[:0],
		})
	}
	return append(dst, wire.MetadataResponseTopic{
		ErrorCode:                 code,
		Name:                      wire.NullStringOf(name),
		Partitions:                parts,
		TopicAuthorizedOperations: authorizedOperationsUnknown,
	})
}

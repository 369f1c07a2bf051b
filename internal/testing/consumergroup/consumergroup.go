// Package consumergroup drives the members of a consumer-protocol group
// (KIP-848) with raw ConsumerGroupHeartbeats, for tests that check what a
// coordinator answers a member at a given epoch: after a gateway restart, a
// coordinator move or a crash, where a client library would hide the
// answer behind its own rejoin.
package consumergroup

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member is one member of a consumer-protocol group, as the answers to its
// heartbeats left it.
type Member struct {
	Group, ID string
	// Topics is the member's subscription, which a full heartbeat sends.
	Topics []string
	Epoch  int32
	// Owned is the partitions the coordinator last assigned the member, in
	// the form its next full heartbeat sends them.
	Owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// Beat sends m's heartbeat at its epoch to to: if full, with its
// subscription, the partitions it owns and a 30 s rebalance timeout;
// otherwise with those left unset (a -1 rebalance timeout), as a member
// whose subscription and partitions have not changed sends it. On error
// code 0 it takes the answer's epoch and, where the answer has one, its
// assignment as the partitions m owns.
func (m *Member) Beat(ctx context.Context, to kmsg.Requestor, full bool) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = m.Group, m.ID, m.Epoch, -1
	if full {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, m.Topics
		req.Topics = append([]kmsg.ConsumerGroupHeartbeatRequestTopic{}, m.Owned...)
	}
	resp, err := req.RequestWith(ctx, to)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode == 0 {
		m.Epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.Owned = nil
			for _, tp := range resp.Assignment.Topics {
				o := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				o.TopicID, o.Partitions = tp.TopicID, tp.Partitions
				m.Owned = append(m.Owned, o)
			}
		}
	}
	return resp, nil
}

// Partitions returns the partitions m owns, of all its topics, in order.
func (m *Member) Partitions() []int32 {
	var ps []int32
	for _, t := range m.Owned {
		ps = append(ps, t.Partitions...)
	}
	slices.Sort(ps)
	return ps
}

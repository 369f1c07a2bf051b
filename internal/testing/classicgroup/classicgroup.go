// Package classicgroup drives the members of a classic Kafka group with raw
// requests (JoinGroup, SyncGroup, Heartbeat, OffsetCommit), for tests that
// check what a coordinator answers a member at a given generation: after a
// gateway restart, a coordinator move or a crash, where a client library
// would hide the answer behind its own rejoin.
package classicgroup

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// Member is one member of a classic group.
type Member struct {
	Group      string
	ID         string
	Generation int32
	// Client is the member's own: a broker serves one request of a
	// connection at a time, and JoinGroup and SyncGroup park until the
	// group's other members arrive.
	Client *kgo.Client
}

// Clients returns n clients of seeds, one per member (a member's JoinGroup
// and SyncGroup park, and a broker serves a connection's requests in
// order), closed when t ends: Kafka 3.6's request versions (OffsetCommit
// names topics) and a 100 ms retry backoff, then opts.
func Clients(t testing.TB, n int, seeds []string, opts ...kgo.Opt) []*kgo.Client {
	t.Helper()
	clients := make([]*kgo.Client, n)
	for i := range clients {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MaxVersions(kversion.V3_6_0()),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		clients[i] = cl
	}
	return clients
}

// Assignment is what Form's leader assigns member id.
func Assignment(id string) string { return "assigned-" + id }

// Form joins one member per client to group (protocol type "consumer",
// protocol "range", 30 s session and rebalance timeouts), answering
// MEMBER_ID_REQUIRED (KIP-394) with the id it carries, and completes the
// rebalance: the leader assigns each member Assignment(id), and every member
// checks it got its own. It returns the members in the order of clients.
func Form(ctx context.Context, group string, clients []*kgo.Client) ([]*Member, error) {
	return FormWith(ctx, group, clients, []byte("subscription"))
}

// FormWith is Form with every member's protocol metadata set to metadata.
func FormWith(ctx context.Context, group string, clients []*kgo.Client, metadata []byte) ([]*Member, error) {
	members := make([]*Member, len(clients))
	errs := make([]error, len(clients))
	leaders := make([]string, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		members[i] = &Member{Group: group, Client: cl}
		wg.Add(1)
		go func() {
			defer wg.Done()
			leaders[i], errs[i] = members[i].join(ctx, metadata)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var ids []string
	for _, m := range members {
		ids = append(ids, m.ID)
	}
	leader := leaders[0]
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var assign []string
			if m.ID == leader {
				assign = ids
			}
			code, got, err := m.Sync(ctx, m.Client, assign)
			switch {
			case err != nil:
				errs[i] = err
			case code != 0 || got != Assignment(m.ID):
				errs[i] = fmt.Errorf("SyncGroup of %s: error %d, assignment %q", m.ID, code, got)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return members, nil
}

// join joins m, setting its id and generation, and returns the leader's id.
func (m *Member) join(ctx context.Context, metadata []byte) (string, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = m.Group, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", metadata
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, m.Client)
	if err == nil && resp.ErrorCode == 79 { // MEMBER_ID_REQUIRED: again with the id it carries
		req.MemberID = resp.MemberID
		resp, err = req.RequestWith(ctx, m.Client)
	}
	if err != nil {
		return "", fmt.Errorf("JoinGroup %s: %w", m.Group, err)
	}
	if resp.ErrorCode != 0 {
		return "", fmt.Errorf("JoinGroup %s: error %d", m.Group, resp.ErrorCode)
	}
	m.ID, m.Generation = resp.MemberID, resp.Generation
	return resp.LeaderID, nil
}

// Sync sends the member's SyncGroup at its generation to to, with the
// leader's assignments (Assignment(id) for each of assign) when assign is
// set, and returns the error code and the member's assignment.
func (m *Member) Sync(ctx context.Context, to kmsg.Requestor, assign []string) (int16, string, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = m.Group, m.Generation, m.ID
	for _, id := range assign {
		as := kmsg.NewSyncGroupRequestGroupAssignment()
		as.MemberID, as.MemberAssignment = id, []byte(Assignment(id))
		req.GroupAssignment = append(req.GroupAssignment, as)
	}
	resp, err := req.RequestWith(ctx, to)
	if err != nil {
		return 0, "", fmt.Errorf("SyncGroup %s/%s: %w", m.Group, m.ID, err)
	}
	return resp.ErrorCode, string(resp.MemberAssignment), nil
}

// Heartbeat sends the member's Heartbeat at its generation to to and
// returns the error code.
func (m *Member) Heartbeat(ctx context.Context, to kmsg.Requestor) (int16, error) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = m.Group, m.Generation, m.ID
	resp, err := req.RequestWith(ctx, to)
	if err != nil {
		return 0, fmt.Errorf("Heartbeat %s/%s: %w", m.Group, m.ID, err)
	}
	return resp.ErrorCode, nil
}

// Commit commits offset for topic's partition as the member, at its
// generation, through to (which must send OffsetCommit at most v9, which
// names topics: a client with kgo.MaxVersions(kversion.V3_6_0()) does), and
// returns the partition's error code.
func (m *Member) Commit(ctx context.Context, to kmsg.Requestor, topic string, partition int32, offset int64) (int16, error) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = m.Group, m.Generation, m.ID
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, to)
	if err != nil {
		return 0, fmt.Errorf("OffsetCommit %s/%s: %w", m.Group, m.ID, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("OffsetCommit %s/%s: %d topics in the answer", m.Group, m.ID, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// GoesOn checks that the member carries on at its generation at to: a
// Heartbeat and a SyncGroup answered 0, the SyncGroup with its assignment,
// and a commit of offset 0 to topic's partition 0 accepted.
func (m *Member) GoesOn(ctx context.Context, to kmsg.Requestor, topic string) error {
	if code, err := m.Heartbeat(ctx, to); err != nil || code != 0 {
		return fmt.Errorf("Heartbeat of %s/%s at generation %d: error %d %v", m.Group, m.ID, m.Generation, code, err)
	}
	if code, got, err := m.Sync(ctx, to, nil); err != nil || code != 0 || got != Assignment(m.ID) {
		return fmt.Errorf("SyncGroup of %s/%s at generation %d: error %d, assignment %q %v", m.Group, m.ID, m.Generation, code, got, err)
	}
	if code, err := m.Commit(ctx, to, topic, 0, 0); err != nil || code != 0 {
		return fmt.Errorf("OffsetCommit of %s/%s at generation %d: error %d %v", m.Group, m.ID, m.Generation, code, err)
	}
	return nil
}

// storedNS is the system store namespace kiggy keeps classic groups in
// (docs/design/consumer-groups.md §6).
const storedNS = "classic-groups"

// Unstored returns the groups of groups of which sys holds no stored form.
// kiggy answers the SyncGroup that completes a rebalance once the group's
// form is stored, so a group Form returned is stored.
func Unstored(ctx context.Context, sys store.SystemStore, groups ...string) ([]string, error) {
	stored, err := sys.LoadSystem(ctx, storedNS)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, g := range groups {
		if stored[g] == nil {
			missing = append(missing, g)
		}
	}
	return missing, nil
}

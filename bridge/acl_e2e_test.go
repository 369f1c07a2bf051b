package bridge_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
)

// aclPrincipals makes a client's id its principal for the test (client id
// "alice" acts as User:alice), standing in for SASL.
func aclPrincipals(t *testing.T) {
	t.Helper()
	restore := bridge.SetTestPrincipals(func(id string) (security.Principal, bool) {
		switch id {
		case "alice", "bob", "admin", "carol":
			return security.User(id), true
		}
		return security.Principal{}, false
	})
	t.Cleanup(restore)
}

// aclGateway starts a gateway with the authorizer on and User:admin a
// super user.
func aclGateway(t *testing.T, allowIfNoACL bool) *kiggytest.Gateway {
	t.Helper()
	aclPrincipals(t)
	return kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
		Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}, AllowEveryoneIfNoACL: allowIfNoACL},
		Group:         group.Config{InitialRebalanceDelay: 50 * time.Millisecond},
	}})
}

func aclClient(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// The ACL tests name topics, as a principal's rights do: the client
	// stays on the versions that name topics (Produce 12, Fetch 12,
	// OffsetCommit 9, OffsetFetch 9; by id, a topic that does not exist
	// is UNKNOWN_TOPIC_ID before any ACL check).
	vs := kversion.Stable()
	for key, v := range map[int16]int16{0: 12, 1: 12, 8: 9, 9: 9} {
		vs.SetMaxKeyVersion(key, v)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(id), kgo.MaxVersions(vs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// direct sends req to the gateway's one broker, bypassing the client's
// coordinator lookups (which would fail first for a denied principal).
func direct[R kmsg.Response](ctx context.Context, t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

func addACLs(ctx context.Context, t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

// TestACLAdminAPIs drives CreateAcls, DescribeAcls and DeleteAcls with kadm:
// only a principal with ALTER (create, delete) or DESCRIBE (describe) on the
// cluster may; bad ACLs get INVALID_REQUEST one by one; filters select as
// Kafka's (MATCH finds the prefixed and wildcard ACLs that apply to a name);
// and the ACLs survive a gateway restart over the same store.
func TestACLAdminAPIs(t *testing.T) {
	aclPrincipals(t)
	backend := &systemLog{Log: memlog.New(memlog.Config{}), sys: map[string]map[string][]byte{}}
	gw := kiggytest.Start(t, kiggytest.Options{Log: backend, Bridge: bridge.Config{
		Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kadm.NewClient(aclClient(t, gw.Addr, "admin"))
	alice := kadm.NewClient(aclClient(t, gw.Addr, "alice"))

	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	addACLs(ctx, t, admin, kadm.NewACLs().Deny("User:bob").AllowHosts().DenyHosts("10.0.0.1").Topics("app-").Groups("g").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed))
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:*").Topics("*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))

	all := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()
	described, err := admin.DescribeACLs(ctx, all)
	if err != nil || len(described) != 1 || described[0].Err != nil {
		t.Fatalf("describe all: %v %+v", err, described)
	}
	if n := len(described[0].Described); n != 5 {
		t.Fatalf("describe all found %d ACLs, want 5: %+v", n, described[0].Described)
	}
	// MATCH for topic app-1: the prefixed app- deny and the wildcard allow.
	match, err := admin.DescribeACLs(ctx, kadm.NewACLs().Topics("app-1").ResourcePatternType(kadm.ACLPatternMatch).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(match) != 1 || match[0].Err != nil || len(match[0].Described) != 2 {
		t.Fatalf("describe MATCH app-1: %v %+v", err, match)
	}

	// A principal without cluster permissions is refused with 31 everywhere.
	if res, err := alice.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Groups("x").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice CreateAcls: %v %+v", err, res)
	}
	if res, err := alice.DescribeACLs(ctx, all); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DescribeAcls: %v %+v", err, res)
	}
	if res, err := alice.DeleteACLs(ctx, all); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DeleteAcls: %v %+v", err, res)
	}
	// Granting DESCRIBE on the cluster lets alice describe (and only that).
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	if res, err := alice.DescribeACLs(ctx, all); err != nil || len(res) != 1 || res[0].Err != nil || len(res[0].Described) != 6 {
		t.Fatalf("alice DescribeAcls with DESCRIBE on the cluster: %v %+v", err, res)
	}

	// Bad ACLs fail one by one with INVALID_REQUEST.
	raw := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		p    string
	}{
		{kmsg.ACLResourceTypeTopic, "ok", kmsg.ACLResourcePatternTypeLiteral, "User:carol"},
		{kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:carol"},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:carol"},
		{kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeMatch, "User:carol"},
		{kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeLiteral, "carol"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal = c.rt, c.name, c.pt, c.p
		cr.Host, cr.Operation, cr.PermissionType = "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		raw.Creations = append(raw.Creations, cr)
	}
	cresp := direct[*kmsg.CreateACLsResponse](ctx, t, aclClient(t, gw.Addr, "admin"), raw)
	var codes []int16
	for _, r := range cresp.Results {
		codes = append(codes, r.ErrorCode)
	}
	if want := []int16{0, 42, 42, 42, 42}; !slices.Equal(codes, want) {
		t.Fatalf("CreateAcls codes %v, want %v", codes, want)
	}

	// DeleteAcls by filter returns what it matched.
	del, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 || del[0].Deleted[0].Operation != kadm.OpRead {
		t.Fatalf("delete alice READ on t: %v %+v", err, del)
	}

	// Restart over the same store: the ACLs are loaded again.
	gw.Stop()
	gw2 := kiggytest.Start(t, kiggytest.Options{Log: backend, Bridge: bridge.Config{
		Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}}})
	after, err := kadm.NewClient(aclClient(t, gw2.Addr, "admin")).DescribeACLs(ctx, all)
	if err != nil || len(after) != 1 || after[0].Err != nil || len(after[0].Described) != 6 {
		t.Fatalf("after a restart: %v %+v", err, after)
	}
}

// systemLog is the embedded log with a system store that outlives a
// gateway, as the Iggy backend's does (the embedded log's forgets at exit).
type systemLog struct {
	*memlog.Log
	mu  sync.Mutex
	sys map[string]map[string][]byte
}

func (s *systemLog) LoadSystem(_ context.Context, ns string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sys[ns]), nil
}

func (s *systemLog) PutSystem(ctx context.Context, ns, key string, v []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: v}})
}

func (s *systemLog) PutSystemAll(_ context.Context, ns string, entries []store.SystemEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sys[ns] == nil {
		s.sys[ns] = map[string][]byte{}
	}
	store.ApplySystemEntries(s.sys[ns], entries)
	return nil
}

// Close keeps the log for the restarted gateway.
func (s *systemLog) Close() error { return nil }

// failingLoads is a systemLog whose first loads fail, as an unreachable
// Iggy would.
type failingLoads struct {
	*systemLog
	left atomic.Int32
}

func (f *failingLoads) LoadSystem(ctx context.Context, ns string) (map[string][]byte, error) {
	if f.left.Add(-1) >= 0 {
		return nil, errors.New("system store unavailable")
	}
	return f.systemLog.LoadSystem(ctx, ns)
}

// TestACLNotReadyDeniesAllButSuperUsers: until the stored ACLs load, only
// super users are allowed (Kafka's AuthorizerNotReadyException); the load is
// retried and then the stored ACLs apply.
func TestACLNotReadyDeniesAllButSuperUsers(t *testing.T) {
	aclPrincipals(t)
	b := kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	sys := &systemLog{Log: memlog.New(memlog.Config{}), sys: map[string]map[string][]byte{}}
	backend := &failingLoads{systemLog: sys}
	backend.left.Store(3)
	cfg := bridge.Config{Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}}
	// A first gateway stores alice's ACL.
	first := kiggytest.Start(t, kiggytest.Options{Log: sys, Bridge: cfg})
	first.CreateTopic(t, "t", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addACLs(ctx, t, kadm.NewClient(aclClient(t, first.Addr, "admin")), b)
	first.Stop()

	gw := kiggytest.Start(t, kiggytest.Options{Log: backend, Bridge: cfg})
	listOffsets := func(id string) int16 {
		r := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		r.Topics = append(r.Topics, lt)
		return direct[*kmsg.ListOffsetsResponse](ctx, t, aclClient(t, gw.Addr, id), r).Topics[0].Partitions[0].ErrorCode
	}
	if code := listOffsets("alice"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice before the ACLs loaded: %d, want 29", code)
	}
	if code := listOffsets("admin"); code != 0 {
		t.Fatalf("admin before the ACLs loaded: %d", code)
	}
	code := int16(-1)
	if !testtools.Eventually(30*time.Second, func() bool { code = listOffsets("alice"); return code == 0 || ctx.Err() != nil }) || code != 0 {
		t.Fatalf("alice still denied after the retries: %d", code)
	}
}

// TestACLOffAnswersSecurityDisabled: without the authorizer the ACL APIs
// answer SECURITY_DISABLED (54), as a Kafka broker without one.
func TestACLOffAnswersSecurityDisabled(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(aclClient(t, gw.Addr, "x"))
	res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %v %+v", err, res)
	}
}

// TestACLEnforcement checks every API the gateway serves with a principal
// the ACLs allow (alice) and one they do not (bob), and the error code
// Kafka sends, per partition, topic or group where Kafka sends it per item.
func TestACLEnforcement(t *testing.T) {
	gw := aclGateway(t, false)
	gw.CreateTopic(t, "t", 1)
	gw.CreateTopic(t, "pub-1", 1)
	gw.CreateTopic(t, "other", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adminCl := aclClient(t, gw.Addr, "admin")
	admin := kadm.NewClient(adminCl)
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:alice").Groups("g").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed))
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:bob").Topics("pub-").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed))
	alice := aclClient(t, gw.Addr, "alice")
	bob := aclClient(t, gw.Addr, "bob")

	// Groups g and other exist (admin joins them), for ListGroups. (kgo
	// sends every request at the highest version both sides serve.)
	for _, id := range []string{"g", "other"} {
		j := kmsg.NewPtrJoinGroupRequest()
		j.Group, j.ProtocolType, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = id, "consumer", 30000, 30000
		j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
		r := direct[*kmsg.JoinGroupResponse](ctx, t, adminCl, j)
		if r.ErrorCode == kerr.MemberIDRequired.Code {
			j.MemberID = r.MemberID
			r = direct[*kmsg.JoinGroupResponse](ctx, t, adminCl, j)
		}
		if r.ErrorCode != 0 {
			t.Fatalf("admin JoinGroup %s: %d", id, r.ErrorCode)
		}
	}

	produce := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batchOf(batch.NoCompression, "v")
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return direct[*kmsg.ProduceResponse](ctx, t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	// fetch answers the code of each topic's partition 0 (several topics:
	// the Iggy backend reads them concurrently).
	fetch := func(cl *kgo.Client, topics ...string) any {
		r := kmsg.NewPtrFetchRequest()
		r.MaxBytes, r.ReplicaID = 1<<20, -1
		for _, topic := range topics {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = topic
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = append(ft.Partitions, fp)
			r.Topics = append(r.Topics, ft)
		}
		resp := direct[*kmsg.FetchResponse](ctx, t, cl, r)
		if len(topics) == 1 {
			return resp.Topics[0].Partitions[0].ErrorCode
		}
		out := map[string]int16{}
		for _, ft := range resp.Topics {
			out[ft.Topic] = ft.Partitions[0].ErrorCode
		}
		return out
	}
	listOffsets := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		r.Topics = append(r.Topics, lt)
		return direct[*kmsg.ListOffsetsResponse](ctx, t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	metadata := func(cl *kgo.Client, topics ...string) map[string]int16 {
		r := kmsg.NewPtrMetadataRequest()
		r.AllowAutoTopicCreation = true
		if topics == nil {
			r.Topics = nil
		} else {
			for _, n := range topics {
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(n)
				r.Topics = append(r.Topics, mt)
			}
		}
		out := map[string]int16{}
		for _, mt := range direct[*kmsg.MetadataResponse](ctx, t, cl, r).Topics {
			out[*mt.Topic] = mt.ErrorCode
		}
		return out
	}
	commit := func(cl *kgo.Client, grp, topic string) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation = grp, -1
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = topic
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Offset = 0
		ct.Partitions = append(ct.Partitions, cp)
		r.Topics = append(r.Topics, ct)
		return direct[*kmsg.OffsetCommitResponse](ctx, t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	offsetFetch := func(cl *kgo.Client, grp, topic string) (int16, int16) {
		r := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = grp
		ft := kmsg.NewOffsetFetchRequestGroupTopic()
		ft.Topic, ft.Partitions = topic, []int32{0}
		rg.Topics = append(rg.Topics, ft)
		r.Groups = append(r.Groups, rg)
		resp := direct[*kmsg.OffsetFetchResponse](ctx, t, cl, r).Groups[0]
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, 0
		}
		return 0, resp.Topics[0].Partitions[0].ErrorCode
	}
	findCoordinator := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorKeys = []string{grp}
		return direct[*kmsg.FindCoordinatorResponse](ctx, t, cl, r).Coordinators[0].ErrorCode
	}
	heartbeat := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID, r.Generation = grp, "nobody", 1
		return direct[*kmsg.HeartbeatResponse](ctx, t, cl, r).ErrorCode
	}
	join := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = grp, "consumer", 30000, 30000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		return direct[*kmsg.JoinGroupResponse](ctx, t, cl, r).ErrorCode
	}
	syncGroup := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.MemberID, r.Generation = grp, "nobody", 1
		return direct[*kmsg.SyncGroupResponse](ctx, t, cl, r).ErrorCode
	}
	leave := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group = grp
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
		return direct[*kmsg.LeaveGroupResponse](ctx, t, cl, r).ErrorCode
	}
	describeGroup := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{grp}
		return direct[*kmsg.DescribeGroupsResponse](ctx, t, cl, r).Groups[0].ErrorCode
	}
	listGroups := func(cl *kgo.Client) []string {
		var ids []string
		for _, g := range direct[*kmsg.ListGroupsResponse](ctx, t, cl, kmsg.NewPtrListGroupsRequest()).Groups {
			ids = append(ids, g.Group)
		}
		slices.Sort(ids)
		return ids
	}
	deleteGroup := func(cl *kgo.Client, grp string) int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{grp}
		return direct[*kmsg.DeleteGroupsResponse](ctx, t, cl, r).Groups[0].ErrorCode
	}
	offsetDelete := func(cl *kgo.Client, grp, topic string) (int16, int16) {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = grp
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = topic
		ot.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		r.Topics = append(r.Topics, ot)
		resp := direct[*kmsg.OffsetDeleteResponse](ctx, t, cl, r)
		if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
			return resp.ErrorCode, 0
		}
		return 0, resp.Topics[0].Partitions[0].ErrorCode
	}
	createTopic := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
		r.Topics = append(r.Topics, ct)
		return direct[*kmsg.CreateTopicsResponse](ctx, t, cl, r).Topics[0].ErrorCode
	}
	deleteTopic := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrDeleteTopicsRequest()
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(topic)
		r.Topics = append(r.Topics, dt)
		return direct[*kmsg.DeleteTopicsResponse](ctx, t, cl, r).Topics[0].ErrorCode
	}
	createPartitions := func(cl *kgo.Client, topic string, n int32) int16 {
		r := kmsg.NewPtrCreatePartitionsRequest()
		r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: n}}
		return direct[*kmsg.CreatePartitionsResponse](ctx, t, cl, r).Topics[0].ErrorCode
	}
	describeConfigs := func(cl *kgo.Client, rt kmsg.ConfigResourceType, name string) int16 {
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: rt, ResourceName: name}}
		return direct[*kmsg.DescribeConfigsResponse](ctx, t, cl, r).Resources[0].ErrorCode
	}
	alterConfigs := func(cl *kgo.Client, name string) int16 {
		r := kmsg.NewPtrAlterConfigsRequest()
		r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}}}
		return direct[*kmsg.AlterConfigsResponse](ctx, t, cl, r).Resources[0].ErrorCode
	}
	incrementalAlter := func(cl *kgo.Client, name string) int16 {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}}}
		return direct[*kmsg.IncrementalAlterConfigsResponse](ctx, t, cl, r).Resources[0].ErrorCode
	}
	throttleBroker := func(cl *kgo.Client) int16 { // kafka-reassign-partitions --throttle
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "leader.replication.throttled.rate", Value: kmsg.StringPtr("1000")}}}}
		return direct[*kmsg.IncrementalAlterConfigsResponse](ctx, t, cl, r).Resources[0].ErrorCode
	}
	initProducerID := func(cl *kgo.Client) int16 {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.ProducerID, r.ProducerEpoch = -1, -1
		return direct[*kmsg.InitProducerIDResponse](ctx, t, cl, r).ErrorCode
	}
	deleteRecords := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrDeleteRecordsRequest()
		r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
		return direct[*kmsg.DeleteRecordsResponse](ctx, t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	describeProducers := func(cl *kgo.Client, topic string) int16 {
		r := kmsg.NewPtrDescribeProducersRequest()
		r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		return direct[*kmsg.DescribeProducersResponse](ctx, t, cl, r).Topics[0].Partitions[0].ErrorCode
	}
	describeCluster := func(cl *kgo.Client) int16 {
		return direct[*kmsg.DescribeClusterResponse](ctx, t, cl, kmsg.NewPtrDescribeClusterRequest()).ErrorCode
	}
	// DescribeLogDirs: DESCRIBE on the cluster, else no directory and a
	// top-level CLUSTER_AUTHORIZATION_FAILED (v3+).
	// ElectLeaders and AlterPartitionReassignments: ALTER on the cluster;
	// ListPartitionReassignments: DESCRIBE on it.
	electLeaders := func(cl *kgo.Client) int16 {
		r := kmsg.NewPtrElectLeadersRequest()
		r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		resp := direct[*kmsg.ElectLeadersResponse](ctx, t, cl, r)
		if p := resp.Topics[0].Partitions[0].ErrorCode; p != resp.ErrorCode && !(resp.ErrorCode == 0 && p == kerr.ElectionNotNeeded.Code) {
			t.Errorf("ElectLeaders: request error %d, partition %d", resp.ErrorCode, p)
		}
		return resp.ErrorCode
	}
	alterReassignments := func(cl *kgo.Client) int16 {
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}
		resp := direct[*kmsg.AlterPartitionAssignmentsResponse](ctx, t, cl, r)
		if p := resp.Topics[0].Partitions[0].ErrorCode; p != resp.ErrorCode {
			t.Errorf("AlterPartitionReassignments: request error %d, partition %d", resp.ErrorCode, p)
		}
		return resp.ErrorCode
	}
	listReassignments := func(cl *kgo.Client) int16 {
		return direct[*kmsg.ListPartitionReassignmentsResponse](ctx, t, cl, kmsg.NewPtrListPartitionReassignmentsRequest()).ErrorCode
	}
	describeLogDirs := func(cl *kgo.Client) int16 {
		r := direct[*kmsg.DescribeLogDirsResponse](ctx, t, cl, kmsg.NewPtrDescribeLogDirsRequest())
		if r.ErrorCode == 0 && len(r.Dirs) != 1 || r.ErrorCode != 0 && len(r.Dirs) != 0 {
			t.Errorf("DescribeLogDirs: error %d with %d log dirs", r.ErrorCode, len(r.Dirs))
		}
		return r.ErrorCode
	}
	apiVersions := func(cl *kgo.Client) int16 {
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName, r.ClientSoftwareVersion = "kiggy-test", "1"
		return direct[*kmsg.ApiVersionsResponse](ctx, t, cl, r).ErrorCode
	}

	const (
		ok       = 0
		topicErr = 29
		groupErr = 30
		clustErr = 31
	)
	pair := func(a, b int16) [2]int16 { return [2]int16{a, b} }
	for _, c := range []struct {
		api  string
		got  any
		want any
	}{
		{"Produce alice t", produce(alice, "t"), int16(ok)},
		{"Produce bob t", produce(bob, "t"), int16(topicErr)},
		{"Produce alice pub-1", produce(alice, "pub-1"), int16(topicErr)},
		{"Fetch alice t", fetch(alice, "t"), int16(ok)},
		{"Fetch bob t", fetch(bob, "t"), int16(topicErr)},
		{"Fetch alice t,other", fetch(alice, "t", "other"), map[string]int16{"t": ok, "other": topicErr}},
		{"ListOffsets alice t", listOffsets(alice, "t"), int16(ok)},
		{"ListOffsets bob t", listOffsets(bob, "t"), int16(topicErr)},
		// bob may DESCRIBE pub-* only: prefixed allow.
		{"ListOffsets bob pub-1", listOffsets(bob, "pub-1"), int16(ok)},
		{"Metadata alice t,pub-1", metadata(alice, "t", "pub-1"), map[string]int16{"t": ok, "pub-1": topicErr}},
		{"Metadata bob all", metadata(bob), map[string]int16{"pub-1": ok}},
		{"Metadata alice all", metadata(alice), map[string]int16{"t": ok}},
		// Auto-creation needs CREATE: alice's ALL covers t only.
		{"Metadata alice auto-create", metadata(alice, "new-topic"), map[string]int16{"new-topic": topicErr}},
		// g-simple: a group without members, which takes simple commits.
		{"OffsetCommit alice g-simple t", commit(alice, "g-simple", "t"), int16(ok)},
		{"OffsetCommit alice g-simple pub-1", commit(alice, "g-simple", "pub-1"), int16(topicErr)},
		{"OffsetCommit bob g t", commit(bob, "g", "t"), int16(groupErr)},
		{"OffsetFetch alice g-simple t", pair(offsetFetch(alice, "g-simple", "t")), pair(ok, ok)},
		{"OffsetFetch alice g-simple pub-1", pair(offsetFetch(alice, "g-simple", "pub-1")), pair(ok, topicErr)},
		{"OffsetFetch bob g t", pair(offsetFetch(bob, "g", "t")), pair(groupErr, 0)},
		{"FindCoordinator alice g", findCoordinator(alice, "g"), int16(ok)},
		{"FindCoordinator bob g", findCoordinator(bob, "g"), int16(groupErr)},
		// Past authorization alice meets the coordinator's own check.
		{"Heartbeat alice g", heartbeat(alice, "g"), int16(kerr.UnknownMemberID.Code)},
		{"Heartbeat bob g", heartbeat(bob, "g"), int16(groupErr)},
		{"JoinGroup bob g", join(bob, "g"), int16(groupErr)},
		{"SyncGroup alice g", syncGroup(alice, "g"), int16(kerr.UnknownMemberID.Code)},
		{"SyncGroup bob g", syncGroup(bob, "g"), int16(groupErr)},
		{"LeaveGroup bob g", leave(bob, "g"), int16(groupErr)},
		{"DescribeGroups alice g", describeGroup(alice, "g"), int16(ok)},
		{"DescribeGroups bob g", describeGroup(bob, "g"), int16(groupErr)},
		{"ListGroups admin", listGroups(adminCl), []string{"g", "g-simple", "other"}},
		{"ListGroups alice", listGroups(alice), []string{"g", "g-simple"}},
		{"ListGroups bob", listGroups(bob), []string(nil)},
		{"DeleteGroups alice g", deleteGroup(alice, "g"), int16(kerr.NonEmptyGroup.Code)},
		{"DeleteGroups bob g", deleteGroup(bob, "g"), int16(groupErr)},
		{"OffsetDelete bob g t", pair(offsetDelete(bob, "g", "t")), pair(groupErr, 0)},
		{"OffsetDelete alice g pub-1", pair(offsetDelete(alice, "g", "pub-1")), pair(ok, topicErr)},
		{"CreateTopics alice t", createTopic(alice, "t"), int16(kerr.TopicAlreadyExists.Code)},
		{"CreateTopics bob x", createTopic(bob, "x"), int16(topicErr)},
		{"DeleteTopics bob t", deleteTopic(bob, "t"), int16(topicErr)},
		{"DeleteTopics alice pub-1", deleteTopic(alice, "pub-1"), int16(topicErr)},
		{"CreatePartitions bob t", createPartitions(bob, "t", 2), int16(topicErr)},
		{"CreatePartitions alice t", createPartitions(alice, "t", 2), int16(ok)},
		{"DescribeConfigs alice topic t", describeConfigs(alice, kmsg.ConfigResourceTypeTopic, "t"), int16(ok)},
		{"DescribeConfigs bob topic t", describeConfigs(bob, kmsg.ConfigResourceTypeTopic, "t"), int16(topicErr)},
		{"DescribeConfigs alice broker", describeConfigs(alice, kmsg.ConfigResourceTypeBroker, "1"), int16(clustErr)},
		{"DescribeConfigs admin broker", describeConfigs(adminCl, kmsg.ConfigResourceTypeBroker, "1"), int16(ok)},
		// ALL on t includes ALTER_CONFIGS and DELETE.
		{"AlterConfigs alice t", alterConfigs(alice, "t"), int16(ok)},
		{"AlterConfigs bob t", alterConfigs(bob, "t"), int16(topicErr)},
		{"IncrementalAlterConfigs alice t", incrementalAlter(alice, "t"), int16(ok)},
		{"IncrementalAlterConfigs bob t", incrementalAlter(bob, "t"), int16(topicErr)},
		// A broker's configs: ALTER_CONFIGS on the cluster.
		{"IncrementalAlterConfigs alice broker", throttleBroker(alice), int16(clustErr)},
		{"IncrementalAlterConfigs admin broker", throttleBroker(adminCl), int16(ok)},
		{"DeleteRecords alice t", deleteRecords(alice, "t"), int16(ok)},
		{"DeleteRecords bob t", deleteRecords(bob, "t"), int16(topicErr)},
		// WRITE on any topic lets a producer be idempotent (KIP-679).
		{"InitProducerId alice", initProducerID(alice), int16(ok)},
		{"InitProducerId bob", initProducerID(bob), int16(clustErr)},
		{"DescribeProducers alice t", describeProducers(alice, "t"), int16(ok)},
		{"DescribeProducers bob t", describeProducers(bob, "t"), int16(topicErr)},
		{"DescribeCluster admin", describeCluster(adminCl), int16(ok)},
		{"DescribeCluster bob", describeCluster(bob), int16(clustErr)},
		{"DescribeLogDirs admin", describeLogDirs(adminCl), int16(ok)},
		{"DescribeLogDirs bob", describeLogDirs(bob), int16(clustErr)},
		{"ElectLeaders admin", electLeaders(adminCl), int16(ok)},
		{"ElectLeaders bob", electLeaders(bob), int16(clustErr)},
		{"AlterPartitionReassignments admin", alterReassignments(adminCl), int16(ok)},
		{"AlterPartitionReassignments bob", alterReassignments(bob), int16(clustErr)},
		{"ListPartitionReassignments admin", listReassignments(adminCl), int16(ok)},
		{"ListPartitionReassignments bob", listReassignments(bob), int16(clustErr)},
		{"ApiVersions bob", apiVersions(bob), int16(ok)},
	} {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.api, c.got, c.want)
		}
	}

	// A franz-go producer sees bob's denial as Kafka's error.
	err := bob.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob's franz-go produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Denials are counted by API.
	m := gw.Metrics()
	for _, want := range []string{`kiggy_authorization_denials_total{api="Produce"}`, `kiggy_authorization_denials_total{api="Fetch"}`,
		`kiggy_authorization_denials_total{api="OffsetCommit"}`, `kiggy_authorization_denials_total{api="InitProducerId"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case map[string]int16:
		y, ok := b.(map[string]int16)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || w != v {
				return false
			}
		}
		return true
	case []string:
		return slices.Equal(x, b.([]string))
	}
	return a == b
}

// TestACLAllowIfNoACLFound: with --allow-everyone-if-no-acl-found a
// resource no ACL names is open to all, one that an ACL names is not.
func TestACLAllowIfNoACLFound(t *testing.T) {
	gw := aclGateway(t, true)
	gw.CreateTopic(t, "open", 1)
	gw.CreateTopic(t, "closed", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addACLs(ctx, t, kadm.NewClient(aclClient(t, gw.Addr, "admin")),
		kadm.NewACLs().Allow("User:alice").Topics("closed").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	bob := aclClient(t, gw.Addr, "bob", kgo.DefaultProduceTopic("open"))
	if err := bob.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("bob produce to open: %v", err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "closed", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produce to closed: %v", err)
	}
	alice := aclClient(t, gw.Addr, "alice")
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "closed", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("alice produce to closed: %v", err)
	}
}

// TestACLsSurviveRestartOnIggy: ACLs created through one gateway are
// enforced by the next one started over the same Iggy server (the system
// store in the reserved stream, docs/design/security.md §6.3).
func TestACLsSurviveRestartOnIggy(t *testing.T) {
	aclPrincipals(t)
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := bridge.Config{Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}}
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, Bridge: cfg})
	if _, ok := first.Log.(store.SystemStore); !ok {
		t.Skip("the Iggy backend keeps no system store in this build")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addACLs(ctx, t, kadm.NewClient(aclClient(t, first.Addr, "admin")),
		kadm.NewACLs().Allow("User:alice").Topics("kept").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	first.Stop()

	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv, Bridge: cfg})
	second.CreateTopic(t, "kept", 1)
	if err := aclClient(t, second.Addr, "alice").ProduceSync(ctx, &kgo.Record{Topic: "kept", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("alice after a restart: %v", err)
	}
	if err := aclClient(t, second.Addr, "bob").ProduceSync(ctx, &kgo.Record{Topic: "kept", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob after a restart: %v", err)
	}
}

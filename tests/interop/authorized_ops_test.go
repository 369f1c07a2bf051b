package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Operation bits of KIP-430's authorized-operations fields: bit n for ACL
// operation code n.
const (
	opRead, opWrite, opCreate, opDelete, opAlter, opDescribe = 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
	opClusterAction, opDescribeConfigs, opAlterConfigs       = 1 << 9, 1 << 10, 1 << 11
	opIdempotentWrite                                        = 1 << 12

	allTopicOps   = opRead | opWrite | opCreate | opDelete | opAlter | opDescribe | opDescribeConfigs | opAlterConfigs
	allGroupOps   = opRead | opDescribe | opDelete | opDescribeConfigs | opAlterConfigs
	allClusterOps = opCreate | opClusterAction | opDescribeConfigs | opAlterConfigs | opIdempotentWrite | opAlter | opDescribe

	// authorizedOperationsUnknown is the fields' "not computed".
	authorizedOperationsUnknown = -2147483648
)

// TestAuthorizedOperations: the authorized operations a client asks for
// (KIP-430) in Metadata (topics), DescribeCluster, DescribeGroups and
// ConsumerGroupDescribe, and those DescribeTopicPartitions always gives,
// are the operations its ACLs allow on the resource, every supported one
// for a super user, as Kafka 4.4 computes them (KIGGY_INTEROP_TARGET=kafka
// runs it against a broker with the StandardAuthorizer); the fields stay
// "not computed" when not asked for, and Metadata's cluster field always.
func TestAuthorizedOperations(t *testing.T) {
	addr := aclSASLTarget(t)
	sfx := strings.ToLower(topicName(t)[len(t.Name())+1:])
	topic, group := "ops-"+sfx, "og-"+sfx
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminCl, alice := aclUserClients(t, addr)
	admin := kadm.NewClient(adminCl)
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for _, acls := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:"+aclAlice).Topics(topic).Operations(kadm.OpRead, kadm.OpAlterConfigs).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:" + aclAlice).Groups(group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:"+aclAlice).Clusters().Operations(kadm.OpDescribe, kadm.OpIdempotentWrite),
	} {
		if _, err := admin.CreateACLs(ctx, acls); err != nil {
			t.Fatal(err)
		}
	}
	untilACLs(ctx, t, alice, topic, group)
	if !testtools.EventuallyEvery(10*time.Second, 100*time.Millisecond, func() bool {
		dr, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, alice)
		return err == nil && dr.ErrorCode == 0
	}) {
		t.Fatal("alice's DESCRIBE on the cluster did not take effect in 10 s")
	}

	// A classic member of group-classic, a consumer-protocol member of
	// group, for each API to describe its kind.
	classic := group + "-classic"
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.MemberID, j.ProtocolType, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = classic, "", "consumer", 30000, 30000
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	for range 2 { // the first answers MEMBER_ID_REQUIRED with the id to use
		jr, err := j.RequestWith(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		j.MemberID = jr.MemberID
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, "ops-member-1", 30000
	hb.SubscribedTopicNames, hb.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := sendHeartbeat(ctx, t, alice, hb); r.ErrorCode != 0 {
		t.Fatalf("alice joining %s: error %d", group, r.ErrorCode)
	}

	type got struct{ topic, cluster, metadataCluster, groups, consumerGroup, topicPartitions int32 }
	ask := func(cl *kgo.Client, include bool) got {
		t.Helper()
		var g got
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 10 // the last version with IncludeClusterAuthorizedOperations
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		md.Topics = []kmsg.MetadataRequestTopic{rt}
		md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = include, include
		mr, err := md.RequestWith(ctx, cl)
		if err != nil || len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
			t.Fatalf("Metadata: %v %+v", err, mr)
		}
		g.topic, g.metadataCluster = mr.Topics[0].AuthorizedOperations, mr.AuthorizedOperations
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = include
		dr, err := dc.RequestWith(ctx, cl)
		if err != nil || dr.ErrorCode != 0 {
			t.Fatalf("DescribeCluster: %v %+v", err, dr)
		}
		g.cluster = dr.ClusterAuthorizedOperations
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups, dg.IncludeAuthorizedOperations = []string{classic}, include
		gr, err := dg.RequestWith(ctx, cl)
		if err != nil || len(gr.Groups) != 1 {
			t.Fatalf("DescribeGroups: %v %+v", err, gr)
		}
		g.groups = gr.Groups[0].AuthorizedOperations
		// The consumer-protocol group, which DescribeGroups does not
		// describe (an error): no operations.
		dg.Groups = []string{group}
		gr, err = dg.RequestWith(ctx, cl)
		if err != nil || len(gr.Groups) != 1 {
			t.Fatalf("DescribeGroups: %v %+v", err, gr)
		}
		if gr.Groups[0].ErrorCode != 69 || gr.Groups[0].AuthorizedOperations != authorizedOperationsUnknown {
			t.Errorf("DescribeGroups of consumer-protocol group %s: error %d, operations %d; want GROUP_ID_NOT_FOUND (69), none", group, gr.Groups[0].ErrorCode, gr.Groups[0].AuthorizedOperations)
		}
		cg := kmsg.NewPtrConsumerGroupDescribeRequest()
		cg.Groups, cg.IncludeAuthorizedOperations = []string{group}, include
		cr, err := cg.RequestWith(ctx, cl)
		if err != nil || len(cr.Groups) != 1 || cr.Groups[0].ErrorCode != 0 {
			t.Fatalf("ConsumerGroupDescribe: %v %+v", err, cr)
		}
		g.consumerGroup = cr.Groups[0].AuthorizedOperations
		dt := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dtt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dtt.Topic = topic
		dt.Topics, dt.ResponsePartitionLimit = []kmsg.DescribeTopicPartitionsRequestTopic{dtt}, 100
		tr, err := dt.RequestWith(ctx, cl)
		if err != nil || len(tr.Topics) != 1 {
			t.Fatalf("DescribeTopicPartitions: %v %+v", err, tr)
		}
		g.topicPartitions = tr.Topics[0].AuthorizedOperations
		return g
	}
	const unknown = authorizedOperationsUnknown
	for _, c := range []struct {
		who  string
		cl   *kgo.Client
		want got
	}{
		// Metadata's cluster field (v8–10) is not computed by Kafka 4.4.
		{"admin (a super user)", adminCl, got{allTopicOps, allClusterOps, unknown, allGroupOps, allGroupOps, allTopicOps}},
		// READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
		{"alice", alice, got{opRead | opDescribe | opAlterConfigs | opDescribeConfigs, opDescribe | opIdempotentWrite,
			unknown, opRead | opDescribe, opRead | opDescribe, opRead | opDescribe | opAlterConfigs | opDescribeConfigs}},
	} {
		if g := ask(c.cl, true); g != c.want {
			t.Errorf("%s asking: %+v, want %+v", c.who, g, c.want)
		}
		// DescribeTopicPartitions has no flag: it always tells.
		if g := ask(c.cl, false); g != (got{unknown, unknown, unknown, unknown, unknown, c.want.topicPartitions}) {
			t.Errorf("%s not asking: %+v, want all %d but DescribeTopicPartitions'", c.who, g, unknown)
		}
	}
}

// TestAuthorizedOperationsWithoutACLs: without an authorizer every
// supported operation is authorized, and says so when asked (Kafka's
// AuthHelper.authorizedOperations without an authorizer), in Metadata for
// a topic that does not exist too.
func TestAuthorizedOperationsWithoutACLs(t *testing.T) {
	tg := newTarget(t)
	topic := topicName(t)
	tg.CreateTopic(t, topic, 1)
	cl, ctx := requestClient(t, tg.Addr(), time.Minute)
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	md.Topics, md.IncludeTopicAuthorizedOperations = []kmsg.MetadataRequestTopic{rt}, true
	mr, err := md.RequestWith(ctx, cl)
	if err != nil || len(mr.Topics) != 1 {
		t.Fatalf("Metadata: %v %+v", err, mr)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dr, err := dc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := mr.Topics[0].AuthorizedOperations; got != allTopicOps {
		t.Errorf("topic operations %b, want %b", got, allTopicOps)
	}
	missing := topic + "-missing"
	rt.Topic = &missing
	md.Topics, md.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{rt}, false
	mr, err = md.RequestWith(ctx, cl)
	if err != nil || len(mr.Topics) != 1 {
		t.Fatalf("Metadata: %v %+v", err, mr)
	}
	// Metadata tells them for a topic it answers with an error too.
	if got := mr.Topics[0]; got.ErrorCode != 3 || got.AuthorizedOperations != allTopicOps {
		t.Errorf("missing topic: error %d, operations %b; want UNKNOWN_TOPIC_OR_PARTITION (3), %b", got.ErrorCode, got.AuthorizedOperations, allTopicOps)
	}
	if got := dr.ClusterAuthorizedOperations; got != allClusterOps {
		t.Errorf("cluster operations %b, want %b", got, allClusterOps)
	}
}

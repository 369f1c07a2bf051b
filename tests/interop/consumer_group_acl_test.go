package interop

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// The ACL target's users: admin is a super user, alice is granted what each
// test gives her.
const (
	aclAdmin, aclAdminPass = "admin", "admin-secret"
	aclAlice, aclAlicePass = "alice", "alice-secret"
)

// aclSASLTarget starts a target with a SASL_PLAINTEXT listener (PLAIN users
// admin and alice) and ACLs on, User:admin a super user, and returns its
// address: kiggy, or with KIGGY_INTEROP_TARGET=kafka a Kafka 4.4 broker of
// its own with the StandardAuthorizer.
func aclSASLTarget(t *testing.T) string {
	t.Helper()
	users := map[string]string{aclAdmin: aclAdminPass, aclAlice: aclAlicePass}
	if os.Getenv(TargetEnv) == "kafka" {
		java, cp := testtools.JavaClasspath(t)
		return kafkatest.StartConfig(t, kafkatest.Config{
			Java: java, Classpath: cp, Heap: "512m", StandardAuthorizer: true,
			Props: map[string]string{"super.users": "User:ANONYMOUS;User:" + aclAdmin},
			SASL:  &kafkatest.SASLConfig{PlainUsers: users},
		}).SASLAddr
	}
	var file strings.Builder
	for u, p := range users {
		file.WriteString(u + ":" + p + "\n")
	}
	plainUsers, err := sasl.ParsePlainUsers(strings.NewReader(file.String()), "test")
	if err != nil {
		t.Fatal(err)
	}
	g := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
		Listeners: map[string]security.Protocol{"": security.SASLPlaintext},
		SASL:      bridge.SASLConfig{Plain: plainUsers},
		Authorization: bridge.AuthorizationConfig{Enabled: true,
			SuperUsers: []security.Principal{{Type: "User", Name: aclAdmin}}},
	}})
	return g.Addr
}

// aclUserClients returns clients of the ACL target at addr authenticated
// as admin and as alice.
func aclUserClients(t *testing.T, addr string) (admin, alice *kgo.Client) {
	t.Helper()
	client := func(user, pass string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	return client(aclAdmin, aclAdminPass), client(aclAlice, aclAlicePass)
}

// untilACLs waits until the ACLs just created are in effect for cl: it may
// describe topic and group. (Kafka's authorizer applies them a moment
// after CreateAcls answers; kiggy at once.)
func untilACLs(ctx context.Context, t *testing.T, cl *kgo.Client, topic, group string) {
	t.Helper()
	ok := testtools.EventuallyEvery(10*time.Second, 100*time.Millisecond, func() bool {
		md := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		md.Topics = []kmsg.MetadataRequestTopic{rt}
		mr, err := md.RequestWith(ctx, cl)
		if err != nil || len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
			return false
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{group}
		gr, err := dg.RequestWith(ctx, cl)
		return err == nil && len(gr.Groups) == 1 && gr.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code
	})
	if !ok {
		t.Fatalf("the ACLs on topic %s and group %s did not take effect in 10 s", topic, group)
	}
}

// TestConsumerGroupTopicAuthorization: the consumer group protocol shows a
// member only topics it may DESCRIBE, as Kafka 4.4 does (KAFKA-18813): a
// heartbeat subscribing by name to a topic alice may not describe is
// refused with TOPIC_AUTHORIZATION_FAILED; alice's regex subscription
// matching a topic she may describe and one she may not is assigned the
// first only; and ConsumerGroupDescribe answers alice
// TOPIC_AUTHORIZATION_FAILED, with Kafka's message and no members, for a
// group whose assignments name the second (KIGGY_INTEROP_TARGET=kafka runs
// it against a broker with the StandardAuthorizer).
func TestConsumerGroupTopicAuthorization(t *testing.T) {
	addr := aclSASLTarget(t)
	sfx := strings.ToLower(topicName(t)[len(t.Name())+1:]) // hex
	okTopic, noTopic := "acl-ok-"+sfx, "acl-no-"+sfx
	groupPrefix := "rg-" + sfx
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adminCl, alice := aclUserClients(t, addr)
	admin := kadm.NewClient(adminCl)
	for topic, n := range map[string]int32{okTopic: 2, noTopic: 4} {
		if _, err := admin.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	acls := kadm.NewACLs().Allow("User:" + aclAlice).Groups(groupPrefix).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	if _, err := admin.CreateACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}
	acls = kadm.NewACLs().Allow("User:"+aclAlice).Topics(okTopic).Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := admin.CreateACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}
	untilACLs(ctx, t, alice, okTopic, groupPrefix+"-any")
	details, err := admin.ListTopics(ctx, okTopic, noTopic)
	if err != nil {
		t.Fatal(err)
	}
	okID, noID := details[okTopic].ID, details[noTopic].ID

	type hb struct {
		group, member string
		epoch         int32
		names         []string
		regex         string
		owned         []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
		full          bool
	}
	send := func(cl *kgo.Client, h hb) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = h.group, h.member, h.epoch
		if h.full {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = h.names
			if h.regex != "" {
				req.SubscribedTopicRegex = &h.regex
			}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for _, x := range h.owned {
				o := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				o.TopicID, o.Partitions = x.TopicID, x.Partitions
				req.Topics = append(req.Topics, o)
			}
		}
		return sendHeartbeat(ctx, t, cl, req)
	}
	// converge heartbeats h's member as a client does until its
	// assignment holds want partitions (Kafka resolves a regex in the
	// background) and returns the member as it is then.
	converge := func(cl *kgo.Client, h hb, want int) hb {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			h.full = true
			resp := send(cl, h)
			if resp.ErrorCode != 0 {
				t.Fatalf("%s in %s: error %d (%v)", h.member, h.group, resp.ErrorCode, resp.ErrorMessage)
			}
			h.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				h.owned = resp.Assignment.Topics
			}
			n := 0
			for _, x := range h.owned {
				n += len(x.Partitions)
			}
			if n >= want {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s in %s owns %v after 30 s, want %d partitions", h.member, h.group, h.owned, want)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	// By name: refused for the topic alice may not describe.
	names := groupPrefix + "-names"
	converge(alice, hb{group: names, member: "alice-names-1", names: []string{okTopic}}, 2)
	if r := send(alice, hb{group: names, member: "alice-names-2", full: true, names: []string{noTopic}}); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice subscribing to %s by name: error %d, want TOPIC_AUTHORIZATION_FAILED (29)", noTopic, r.ErrorCode)
	}

	// By regex: only the topic she may describe.
	regex := groupPrefix + "-regex"
	member := converge(alice, hb{group: regex, member: "alice-regex-1", regex: "acl-.*-" + sfx}, 2)
	// A moment more (Kafka refreshes regexes in the background): nothing
	// of the other topic comes later.
	time.Sleep(2 * time.Second)
	member = converge(alice, member, 2)
	for _, x := range member.owned {
		if x.TopicID != okID {
			t.Errorf("alice's regex member is assigned %v of topic %x, which she may not describe", x.Partitions, x.TopicID)
		}
	}

	// Described: a group holding the other topic is not shown to alice.
	mixed := groupPrefix + "-mixed"
	converge(adminCl, hb{group: mixed, member: "admin-mixed-1", names: []string{noTopic}}, 4)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{mixed, regex}
	resp, err := req.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	byGroup := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
	for _, g := range resp.Groups {
		byGroup[g.Group] = g
	}
	const wantMsg = "The group has described topic(s) that the client is not authorized to describe."
	if g := byGroup[mixed]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || g.ErrorMessage == nil || *g.ErrorMessage != wantMsg || len(g.Members) != 0 {
		t.Errorf("alice describing %s: error %d, message %v, %d members; want 29, %q, none", mixed, g.ErrorCode, g.ErrorMessage, len(g.Members), wantMsg)
	}
	g := byGroup[regex]
	if g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Fatalf("alice describing %s: error %d, %d members; want 0 and her member", regex, g.ErrorCode, len(g.Members))
	}
	for _, x := range g.Members[0].Assignment.TopicPartitions {
		if x.TopicID != okID || x.TopicID == noID {
			t.Errorf("%s described with topic %x (%s) assigned", regex, x.TopicID, x.Topic)
		}
	}
	if !slices.ContainsFunc(g.Members[0].Assignment.TopicPartitions, func(x kmsg.AssignmentTopicPartition) bool { return x.Topic == okTopic }) {
		t.Errorf("%s described without %s assigned: %+v", regex, okTopic, g.Members[0].Assignment)
	}
}

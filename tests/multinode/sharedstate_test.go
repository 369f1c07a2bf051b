package multinode

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// TestStateNoticesAcrossInstances: a topic config changed through one
// instance is enforced by the other at once, by the notice the first
// writes into the membership log (docs/design/cluster.md §10 "Notices"),
// though the other's --state-refresh is an hour: node 2's Produce path
// refuses a record over the max.message.bytes set through node 1, and
// accepts it again when node 1 deletes the setting.
func TestStateNoticesAcrossInstances(t *testing.T) {
	const topic, parts = "notices", int32(4)
	n1, n2 := startPair(t, topic, parts, func(c *bridge.Config) { c.StateRefresh = time.Hour })
	p := int32(-1)
	for q := range parts {
		if n2.m.Leader(topic, q).Serving {
			p = q
			break
		}
	}
	if p < 0 {
		t.Fatal("node 2 serves no partition")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The client retries what is retriable (a leader that moved, on a
	// loaded machine): MESSAGE_TOO_LARGE is not, and fails the produce at
	// once. Each produce has 10 s.
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.addr, n2.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("v"), 1024)
	produce := func() error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: p, Value: value}).FirstErr()
	}
	if err := produce(); err != nil {
		t.Fatalf("produce to node 2's partition %d: %v", p, err)
	}
	alter := func(op kmsg.IncrementalAlterConfigOp, value string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "max.message.bytes", op, kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl.Broker(1)) // node 1 alone
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs at node 1: %v %+v", err, resp)
		}
	}
	// waitFor waits for node 2's produce to behave as want says, and logs
	// how long it took; an hour's refresh would never get there.
	waitFor := func(what string, want func(error) bool) {
		t.Helper()
		start := time.Now()
		var last error
		if !testtools.Eventually(10*time.Second, func() bool { last = produce(); return want(last) }) {
			t.Fatalf("timed out after 10 s waiting for %s; the last produce: %v", what, last)
		}
		t.Logf("%s after %v (%v)", what, time.Since(start).Round(time.Millisecond), last)
	}
	alter(kmsg.IncrementalAlterConfigOpSet, "200")
	waitFor("node 2 refuses a 1 KiB record over node 1's max.message.bytes 200", func(err error) bool {
		return errors.Is(err, kerr.MessageTooLarge)
	})
	alter(kmsg.IncrementalAlterConfigOpDelete, "")
	waitFor("node 2 accepts it again once node 1 deleted the setting", func(err error) bool { return err == nil })
	for _, in := range []*instance{n1, n2} {
		var b strings.Builder
		in.m.WriteMetrics(&b)
		t.Logf("node %d: %s", in.id, strings.Join(grepLines(b.String(), "kiggy_cluster_state_notices"), "; "))
	}
}

// TestSecurityNoticesAcrossInstances: ACLs and SCRAM credentials changed
// through node 1 are enforced by node 2 at once, by notices, though node
// 2's --state-refresh is an hour: alice may describe the topic at node 2
// once node 1 allowed it and not once node 1 deleted the ACL, and a SCRAM
// user deleted through node 1 can no longer log in at node 2, which had
// his credential cached.
func TestSecurityNoticesAcrossInstances(t *testing.T) {
	const topic, parts = "secured", int32(2)
	users, err := sasl.ParsePlainUsers(strings.NewReader("admin:secret\nalice:secret\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	secured := func(c *bridge.Config) {
		c.StateRefresh = time.Hour
		c.Listeners = map[string]security.Protocol{"": security.SASLPlaintext}
		c.SASL = bridge.SASLConfig{Plain: users, Scram: true}
		c.Authorization = bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}}
	}
	n1, n2 := startPair(t, topic, parts, secured)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(addr string, mech ksasl.Mechanism) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// Requests to node 1 alone, or node 2 alone: not to the controller or
	// a coordinator the client would pick.
	admin1 := client(n1.addr, kplain.Auth{User: "admin", Pass: "secret"}.AsMechanism()).Broker(1)
	alice2 := client(n2.addr, kplain.Auth{User: "alice", Pass: "secret"}.AsMechanism()).Broker(2)
	aliceDescribes := func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, alice2)
		if err != nil {
			t.Fatalf("alice's Metadata at node 2: %v", err)
		}
		return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		testtools.WaitFor(t, 10*time.Second, what, cond)
		t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
	}
	if aliceDescribes() {
		t.Fatal("alice describes the topic at node 2 before any ACL allows it")
	}
	binding := func() kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
		return c
	}()
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = append(create.Creations, binding)
	if resp, err := create.RequestWith(ctx, admin1); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls at node 1: %v %+v", err, resp)
	}
	waitFor("node 2 allows alice by node 1's ACL", aliceDescribes)
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = binding.ResourceType, kmsg.StringPtr(topic), binding.ResourcePatternType
	f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr("User:alice"), kmsg.StringPtr("*"), binding.Operation, binding.PermissionType
	del.Filters = append(del.Filters, f)
	if resp, err := del.RequestWith(ctx, admin1); err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteAcls at node 1: %v %+v", err, resp)
	}
	waitFor("node 2 refuses alice once node 1 deleted the ACL", func() bool { return !aliceDescribes() })

	// SCRAM: dave, created through node 1, logs in at node 2 (a lookup that
	// misses reads the store again), which then holds his credential; once
	// node 1 deleted him, node 2 refuses his next login.
	upsert := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = "dave", 1, 4096 // SCRAM-SHA-256
	u.Salt = []byte("0123456789abcdef")
	if u.SaltedPassword, err = pbkdf2.Key(sha256.New, "pw", u.Salt, int(u.Iterations), sha256.Size); err != nil {
		t.Fatal(err)
	}
	upsert.Upsertions = append(upsert.Upsertions, u)
	if resp, err := upsert.RequestWith(ctx, admin1); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("AlterUserScramCredentials at node 1: %v %+v", err, resp)
	}
	dave := kscram.Auth{User: "dave", Pass: "pw"}.AsSha256Mechanism()
	login := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n2.addr), kgo.SASL(dave), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err != nil && !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("dave's login at node 2: %v, want success or SASL_AUTHENTICATION_FAILED", err)
		}
		return err
	}
	waitFor("dave logs in at node 2", func() bool { return login() == nil })
	remove := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "dave", 1
	remove.Deletions = append(remove.Deletions, d)
	if resp, err := remove.RequestWith(ctx, admin1); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("AlterUserScramCredentials deletion at node 1: %v %+v", err, resp)
	}
	waitFor("node 2 refuses dave once node 1 deleted him", func() bool { return login() != nil })
}

// grepLines returns the lines of s that start with prefix.
func grepLines(s, prefix string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

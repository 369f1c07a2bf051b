package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/security"
	"github.com/kiggy-io/kiggy/security/sasl"
)

// TestSharedAdminStateOnIggy: three gateways on one Iggy (a real
// iggy-server where one is found), with ACLs, SASL PLAIN and SCRAM. gw1
// changes ACLs, SCRAM credentials, client quotas, a topic config and a log
// start. gw2 never refreshes on its own (StateRefresh 1 h): its admin
// requests, and a login of a user it does not know, read the store at once.
// gw3 refreshes every 100 ms: its hot paths (authorization, SCRAM login of a
// deleted user, ListOffsets) follow within it. Before sharedstate.go,
// another gateway's ACL changes never reached a gateway until it restarted,
// and the rest took up to 5 s.
func TestSharedAdminStateOnIggy(t *testing.T) {
	users, err := sasl.ParsePlainUsers(strings.NewReader("admin:secret\nalice:secret\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg := func(refresh time.Duration) bridge.Config {
		return bridge.Config{
			Listeners:     map[string]security.Protocol{"": security.SASLPlaintext},
			SASL:          bridge.SASLConfig{Plain: users, Scram: true},
			Authorization: bridge.AuthorizationConfig{Enabled: true, SuperUsers: []security.Principal{security.User("admin")}},
			StateRefresh:  refresh,
		}
	}
	gw1 := kiggytest.Start(t, kiggytest.Options{Iggy: true, Bridge: cfg(time.Hour)})
	gw2 := kiggytest.Start(t, gw1.SameIggy(kiggytest.Options{Bridge: cfg(time.Hour)}))
	gw3 := kiggytest.Start(t, gw1.SameIggy(kiggytest.Options{Bridge: cfg(100 * time.Millisecond)}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(addr string, mech ksasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := kplain.Auth{User: "admin", Pass: "secret"}.AsMechanism()
	alice := kplain.Auth{User: "alice", Pass: "secret"}.AsMechanism()
	adm1 := kadm.NewClient(client(gw1.Addr, admin))
	adm2 := kadm.NewClient(client(gw2.Addr, admin))
	adm3 := kadm.NewClient(client(gw3.Addr, admin))
	const topic = "shared-admin"
	if res, err := adm1.CreateTopic(ctx, 1, -1, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	producer := client(gw1.Addr, admin, kgo.DefaultProduceTopic(topic))
	for range 5 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// ACLs. aliceDescribes asks gw3's authorizer (Metadata of the topic).
	alice3 := client(gw3.Addr, alice)
	aliceDescribes := func() bool {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, alice3)
		if err != nil {
			t.Fatalf("alice's Metadata at gw3: %v", err)
		}
		return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
	}
	if aliceDescribes() {
		t.Fatal("alice describes the topic before any ACL allows it")
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	addACLs(ctx, t, adm1, acl)
	all := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()
	countACLs := func(adm *kadm.Client) int {
		d, err := adm.DescribeACLs(ctx, all)
		if err != nil || len(d) != 1 || d[0].Err != nil {
			t.Fatalf("describe ACLs: %v %+v", err, d)
		}
		return len(d[0].Described)
	}
	if n := countACLs(adm2); n != 1 {
		t.Errorf("DescribeAcls at gw2 right after gw1 created an ACL: %d ACLs, want 1", n)
	}
	testtools.WaitFor(t, 5*time.Second, "gw3 to allow alice by gw1's ACL", aliceDescribes)
	// Deleted through gw2, which has never refreshed: it deletes what gw1
	// created, and gw3 stops allowing it.
	del, err := adm2.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral).AllowHosts())
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("DeleteAcls at gw2 of gw1's ACL: %v %+v", err, del)
	}
	if n := countACLs(adm1); n != 0 {
		t.Errorf("DescribeAcls at gw1 after gw2 deleted the ACL: %d ACLs, want 0", n)
	}
	testtools.WaitFor(t, 5*time.Second, "gw3 to refuse alice once gw2 deleted the ACL", func() bool { return !aliceDescribes() })

	// SCRAM: a user created through gw1 logs in at gw2 at once, although
	// gw2 read the credentials (without him) a moment before; once deleted,
	// gw3 refuses him.
	dave := kscram.Auth{User: "dave", Pass: "pw"}.AsSha256Mechanism()
	login := func(addr string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(dave), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := login(gw2.Addr); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("dave's login at gw2 before he exists: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, err := adm1.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	// A lookup that misses reads the store again at most every 250 ms;
	// gw2's refresh (1 h) never runs, so only that re-read lets him in.
	testtools.WaitFor(t, 2*time.Second, "dave's login at gw2 right after gw1 created him", func() bool { return login(gw2.Addr) == nil })
	if err := login(gw3.Addr); err != nil {
		t.Errorf("dave's login at gw3: %v", err)
	}
	if _, err := adm1.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, nil); err != nil {
		t.Fatal(err)
	}
	testtools.WaitFor(t, 5*time.Second, "gw3 to refuse dave once gw1 deleted him", func() bool {
		err := login(gw3.Addr)
		if err != nil && !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("dave's login at gw3: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		return err != nil
	})

	// Client quotas: gw2 describes gw1's quota at once, and removes it
	// although it never read it itself.
	id := "shared-app"
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}}
	if res, err := adm1.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter quotas at gw1: %v %+v", err, res)
	}
	quotas := func(adm *kadm.Client) []kadm.ClientQuotaValue {
		d, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: &id}})
		if err != nil {
			t.Fatal(err)
		}
		if len(d) == 0 {
			return nil
		}
		return d[0].Values
	}
	if q := quotas(adm2); len(q) != 1 || q[0] != (kadm.ClientQuotaValue{Key: "producer_byte_rate", Value: 1024}) {
		t.Errorf("DescribeClientQuotas at gw2 right after gw1's change: %+v", q)
	}
	if res, err := adm2.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("remove the quota at gw2: %v %+v", err, res)
	}
	if q := quotas(adm1); len(q) != 0 {
		t.Errorf("gw1 after gw2 removed the quota gw1 set: %+v", q)
	}

	// Topic configs and log starts.
	if rs, err := adm1.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: ptr("5000")}}, topic); err != nil || rs[0].Err != nil {
		t.Fatalf("alter config: %v %v", err, rs)
	}
	if v := describeTopic(t, adm2, topic)["segment.ms"].MaybeValue(); v != "5000" {
		t.Errorf("DescribeConfigs at gw2 right after gw1's change: segment.ms %q, want 5000", v)
	}
	start := func(adm *kadm.Client) int64 {
		lo, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lo.Lookup(topic, 0)
		return o.Offset
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3})
	if _, err := adm1.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	testtools.WaitFor(t, 5*time.Second, "gw3's log start to follow gw1's DeleteRecords", func() bool { return start(adm3) == 3 })
	// gw2 has not seen it: its DeleteRecords to 2 must not move it back.
	os = kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2})
	res, err := adm2.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 3 {
		t.Errorf("DeleteRecords to 2 at gw2 after gw1's to 3: %+v, want low watermark 3", r)
	}
	if s := start(adm1); s != 3 {
		t.Errorf("the log start at gw1 after gw2's DeleteRecords to 2: %d, want 3 (it never moves back)", s)
	}

	// Broker replication throttles (the cluster default): set through
	// gw1, described by gw2 at once, deleted through gw3.
	throttle := "leader.replication.throttled.rate"
	if rs, err := adm1.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: throttle, Value: ptr("1000")}}); err != nil || rs[0].Err != nil {
		t.Fatalf("alter the default broker throttle at gw1: %v %+v", err, rs)
	}
	defaultThrottle := func(adm *kadm.Client) string {
		rcs, err := adm.DescribeBrokerConfigs(ctx)
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("describe the broker default: %v %+v", err, rcs)
		}
		for _, c := range rcs[0].Configs {
			if c.Key == throttle {
				return c.MaybeValue()
			}
		}
		return ""
	}
	if v := defaultThrottle(adm2); v != "1000" {
		t.Errorf("the default throttle at gw2 right after gw1 set it: %q, want 1000", v)
	}
	if rs, err := adm3.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: throttle}}); err != nil || rs[0].Err != nil {
		t.Fatalf("delete the default broker throttle at gw3: %v %+v", err, rs)
	}
	if v := defaultThrottle(adm1); v != "" {
		t.Errorf("the default throttle at gw1 after gw3 deleted it: %q", v)
	}
}

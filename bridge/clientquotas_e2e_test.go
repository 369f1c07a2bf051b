package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/quota"
)

// TestAlterClientQuotas: quotas set by AlterClientQuotas (franz-go's
// kadm) apply to the clients of their entity and no other, at once on the
// gateway that took them and within its 5 s refresh on another gateway of
// the same system store; DescribeClientQuotas lists them with Kafka's
// filters; validate_only changes nothing; a removed override gives the
// client back the flags' default quota; each of Kafka's checks refuses its
// entity with Kafka's message and leaves the others of the request alone.
func TestAlterClientQuotas(t *testing.T) {
	t.Parallel()
	shared := &sharedStore{Log: memlog.New(memlog.Config{}), ns: map[string]map[string][]byte{}}
	cfg := bridge.Config{Quota: quota.Config{Samples: 11, Window: 100 * time.Millisecond},
		ControllerMutationRate: 1000} // a default, never reached here
	gw := kiggytest.Start(t, kiggytest.Options{Log: shared, Bridge: cfg})
	gw2 := kiggytest.Start(t, kiggytest.Options{Log: shared, Bridge: cfg})
	const topic = "client-quotas"
	gw.CreateTopic(t, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := newAdmin(t, gw.Addr)
	name := func(s string) *string { return &s }
	slow := kadm.ClientQuotaEntity{{Type: "client-id", Name: name("slow")}}
	alter := []kadm.AlterClientQuotaEntry{
		{Entity: slow, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 20 << 10}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: name("alice")}, {Type: "client-id"}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 12.5}, {Key: "controller_mutation_rate", Value: 3}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: name("10.0.0.1")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 7}}},
	}
	describe := func(addr string, strict bool, comps ...kadm.DescribeClientQuotaComponent) map[string]map[string]float64 {
		t.Helper()
		d, err := newAdmin(t, addr).DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("DescribeClientQuotas: %v", err)
		}
		out := map[string]map[string]float64{}
		for _, q := range d {
			vs := map[string]float64{}
			for _, v := range q.Values {
				vs[v.Key] = v.Value
			}
			out[q.Entity.String()] = vs
		}
		return out
	}

	// validate_only: every entity passes, nothing changes.
	if res, err := adm.ValidateAlterClientQuotas(ctx, alter); err != nil || len(res) != 3 || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("validate_only: %v %+v", err, res)
	}
	if got := describe(gw.Addr, false); len(got) != 1 {
		t.Fatalf("after validate_only, entities %v; want only the flags' default", got)
	}
	if res, err := adm.AlterClientQuotas(ctx, alter); err != nil || len(res) != 3 || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
	want := map[string]map[string]float64{
		"{client-id=slow}":                      {"producer_byte_rate": 20 << 10},
		"{user=alice, client-id=<default>}":     {"request_percentage": 12.5, "controller_mutation_rate": 3},
		"{ip=10.0.0.1}":                         {"connection_creation_rate": 7},
		"{user=<default>, client-id=<default>}": {"controller_mutation_rate": 1000},
	}
	if got := describe(gw.Addr, false); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("described %v, want %v", got, want)
	}
	for _, f := range []struct {
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{comps: []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: name("slow")}}, want: []string{"{client-id=slow}"}},
		{comps: []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, want: []string{"{user=<default>, client-id=<default>}", "{user=alice, client-id=<default>}"}},
		{strict: true, comps: []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: name("alice")}}},
		{comps: []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: 2}}, want: []string{"{ip=10.0.0.1}"}},
		{comps: []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 1}}, want: []string{"{user=<default>, client-id=<default>}", "{user=alice, client-id=<default>}"}},
	} {
		var got []string
		for e := range describe(gw.Addr, f.strict, f.comps...) {
			got = append(got, e)
		}
		if fmt.Sprint(sortedStrings(got)) != fmt.Sprint(sortedStrings(f.want)) {
			t.Errorf("filter %+v (strict %v): entities %v, want %v", f.comps, f.strict, got, f.want)
		}
	}
	// The other gateway reads the system store again within 5 s (the
	// wait allows for a loaded machine).
	if !testtools.Eventually(20*time.Second, func() bool { return fmt.Sprint(describe(gw2.Addr, false)) == fmt.Sprint(want) }) {
		t.Fatalf("the second gateway never showed the stored quotas: %v", describe(gw2.Addr, false))
	}

	// The quota applies to client id "slow" alone.
	produce := func(clientID string) int64 {
		t.Helper()
		var seen throttleSeen
		p, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
			kgo.WithHooks(&seen), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := range 80 {
			p.Produce(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d-%s", clientID, i, strings.Repeat("x", 1000))), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return seen.n.Load()
	}
	if n := produce("slow"); n == 0 {
		t.Fatal("80 KiB from client id slow against its 20 KiB a second: never throttled")
	}
	if n := produce("fast"); n != 0 {
		t.Fatalf("client id fast, under no byte-rate quota, was throttled %d times", n)
	}

	// Removed, the override no longer applies; removing what is not
	// stored (and was never set) is no error.
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: slow, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}, {Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 50}}},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("removal: %v %+v", err, res)
	}
	if got := describe(gw.Addr, false); got["{client-id=slow}"] != nil || got["{user=<default>, client-id=<default>}"]["controller_mutation_rate"] != 50 {
		t.Fatalf("after the removal and the default's override: %v", got)
	}
	if n := produce("slow"); n != 0 {
		t.Fatalf("client id slow, its quota removed, was throttled %d times", n)
	}
	// The stored default is removed: the flag's value is back.
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}, {Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Remove: true}}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := describe(gw.Addr, false)["{user=<default>, client-id=<default>}"]; got["controller_mutation_rate"] != 1000 {
		t.Fatalf("after removing the stored default: %v, want the flag's 1000", got)
	}

	// Kafka's checks (ClientQuotaControlManager), each entity on its own.
	type ent = []kmsg.AlterClientQuotasRequestEntryEntity
	part := func(typ string, n *string) kmsg.AlterClientQuotasRequestEntryEntity {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type, e.Name = typ, n
		return e
	}
	op := func(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value = key, v
		return o
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	cases := []struct {
		entity ent
		ops    []kmsg.AlterClientQuotasRequestEntryOp
		code   int16
		msg    string
	}{
		{ent{part("client-id", name("ok"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("consumer_byte_rate", 4096)}, 0, ""},
		{ent{part("client-id", name("frac"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1.5)}, 42, "producer_byte_rate cannot be a fractional value."},
		{ent{part("client-id", name("zero"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 0)}, 42, "Quota request_percentage must be greater than 0"},
		{ent{part("user", name("bob"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 3)}, 42, "Invalid configuration key connection_creation_rate"},
		{ent{part("ip", nil)}, []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1e10)}, 42, "Proposed value for connection_creation_rate is too large for an INT."},
		{ent{part("ip", nil), part("user", nil)}, []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 3)}, 42, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{ent{part("ip", name("not an address"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 3)}, 42, "not an address is not a valid IP or resolvable host."},
		{ent{part("group", name("g"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 3)}, 42, "Unhandled client quota entity type: group"},
		{ent{part("user", name(""))}, []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 3)}, 42, "Empty user not supported"},
		{ent{}, []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 3)}, 42, "Invalid empty client quota entity"},
		{ent{part("client-id", name("twice"))}, []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 3), op("request_percentage", 4)}, 42, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=twice})"},
	}
	for _, c := range cases {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity, e.Ops = c.entity, c.ops
		req.Entries = append(req.Entries, e)
	}
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	resp.Version = 1
	rc := dialClient(t, gw.Addr, "admin")
	rc.recv(rc.send(req), resp)
	if len(resp.Entries) != len(cases) {
		t.Fatalf("%d results for %d entities", len(resp.Entries), len(cases))
	}
	for i, c := range cases {
		r := resp.Entries[i]
		var msg string
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != c.code || msg != c.msg {
			t.Errorf("entity %v %v: error %d %q, want %d %q", c.entity, c.ops, r.ErrorCode, msg, c.code, c.msg)
		}
	}
	if got := describe(gw.Addr, true, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 2}); fmt.Sprint(got) != fmt.Sprint(map[string]map[string]float64{"{client-id=ok}": {"consumer_byte_rate": 4096}}) {
		t.Fatalf("client-id entities after the checks: %v, want only the one that passed", got)
	}
}

// sortedStrings returns s sorted (nil for none).
func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// newAdmin returns a kadm client of addr, closed with the test.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestAlterClientQuotasIP: a connection_creation_rate set by
// AlterClientQuotas on the client's own address refuses its connections
// past the rate, as the flag's default IP rate does (KIP-612); one set on
// another address leaves it alone; removed, it refuses nothing more.
func TestAlterClientQuotasIP(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Quota: quota.Config{Samples: 11, Window: 100 * time.Millisecond}},
		EngineConfig: engine.Config{RateSamples: 11, RateWindow: 100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := newAdmin(t, gw.Addr)
	set := func(ip string, remove bool) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: &ip}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 2, Remove: remove}}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("AlterClientQuotas ip %s: %v %+v", ip, err, res)
		}
	}
	// dialN opens and closes n connections one after the other and
	// returns how many the gateway refused.
	dialN := func(n int) uint64 {
		t.Helper()
		before := gw.EngineStats().Closes[engine.ReasonConnectionRate]
		for range n {
			c, err := kafkawire.Dial(gw.Addr, "dialer", 5*time.Second)
			if err == nil {
				c.Close()
			}
		}
		// A refused connection is held for its throttle (at most one
		// window) before it is closed and counted.
		time.Sleep(300 * time.Millisecond)
		return gw.EngineStats().Closes[engine.ReasonConnectionRate] - before
	}
	set("10.0.0.1", false)
	if n := dialN(10); n != 0 {
		t.Fatalf("a rate on 10.0.0.1 refused %d connections from 127.0.0.1", n)
	}
	set("127.0.0.1", false)
	if n := dialN(10); n == 0 {
		t.Fatal("10 connections in a row from 127.0.0.1 at 2 a second: none refused")
	}
	set("127.0.0.1", true)
	time.Sleep(1200 * time.Millisecond) // the refused ones' span ages out
	if n := dialN(10); n != 0 {
		t.Fatalf("the rate removed, %d connections refused", n)
	}
	// An entity named by a host name applies to the addresses it resolves
	// to, as Kafka resolves it.
	set("localhost", false)
	if n := dialN(10); n == 0 {
		t.Fatal("10 connections in a row from 127.0.0.1 at 2 a second for localhost: none refused")
	}
	set("localhost", true)
	time.Sleep(1200 * time.Millisecond)
	if n := dialN(10); n != 0 {
		t.Fatalf("the rate on localhost removed, %d connections refused", n)
	}
}

// TestClientQuotasSurviveRestartOnIggy: client quotas live in the system
// store: set with kadm on one gateway, they are in the quota book of a new
// gateway over the same Iggy server (described from the table its meters
// read).
func TestClientQuotasSurviveRestartOnIggy(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	if _, ok := first.Log.(store.SystemStore); !ok {
		t.Skip("the Iggy backend keeps no system store in this build")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user, client := "CN=svc,O=acme", "app & co"
	entity := kadm.ClientQuotaEntity{{Type: "user", Name: &user}, {Type: "client-id", Name: &client}}
	res, err := newAdmin(t, first.Addr).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity,
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1 << 20}, {Key: "request_percentage", Value: 7.5}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	// Iggy's system store keeps keys of at most 4 KiB: a longer entity is
	// refused with POLICY_VIOLATION, and nothing of it is kept.
	long := strings.Repeat("c", 5000)
	res, err = newAdmin(t, first.Addr).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &long}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 1}}}})
	if err != nil || !errors.Is(res[0].Err, kerr.PolicyViolation) {
		t.Fatalf("a 5,000-byte client id: %v %+v, want POLICY_VIOLATION", err, res)
	}
	first.Stop()

	second := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	if all, err := newAdmin(t, second.Addr).DescribeClientQuotas(ctx, false, nil); err != nil || len(all) != 1 {
		t.Fatalf("after a restart, every entity: %v %+v; want the one stored", err, all)
	}
	d, err := newAdmin(t, second.Addr).DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchName: &user}, {Type: "client-id", MatchName: &client}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || len(d[0].Values) != 2 || d[0].Values[0] != (kadm.ClientQuotaValue{Key: "consumer_byte_rate", Value: 1 << 20}) ||
		d[0].Values[1] != (kadm.ClientQuotaValue{Key: "request_percentage", Value: 7.5}) {
		t.Fatalf("after a restart: %+v", d)
	}
}

// TestClientQuotaEntityCap: past --max-client-quota-entities a new entity
// is refused with POLICY_VIOLATION and counted; a stored entity may still
// change, and a removal makes room.
func TestClientQuotaEntityCap(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{MaxClientQuotaEntities: 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := newAdmin(t, gw.Addr)
	alter := func(client string, value float64, remove bool) error {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &client}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: value, Remove: remove}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Err
	}
	for _, c := range []string{"a", "b"} {
		if err := alter(c, 10, false); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if err := alter("c", 10, false); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("a third entity past a cap of 2: %v, want POLICY_VIOLATION", err)
	}
	if err := alter("a", 20, false); err != nil {
		t.Fatalf("changing a stored entity at the cap: %v", err)
	}
	if err := alter("b", 0, true); err != nil {
		t.Fatal(err)
	}
	if err := alter("c", 10, false); err != nil {
		t.Fatalf("after a removal: %v", err)
	}
	if got := metricValue(t, gw.Metrics(), `kiggy_admin_refused_total{reason="max_client_quota_entities"}`); got != 1 {
		t.Fatalf("kiggy_admin_refused_total{reason=\"max_client_quota_entities\"} = %v, want 1", got)
	}
}

// TestClientQuotasACL: with ACLs on, AlterClientQuotas needs ALTER_CONFIGS
// on the cluster (every entity is CLUSTER_AUTHORIZATION_FAILED without it,
// and nothing is stored) and DescribeClientQuotas DESCRIBE_CONFIGS, as
// Kafka's ControllerApis and KafkaApis ask.
func TestClientQuotasACL(t *testing.T) {
	gw := aclGateway(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := kadm.NewClient(aclClient(t, gw.Addr, "admin"))
	alice := kadm.NewClient(aclClient(t, gw.Addr, "alice"))
	name := "app"
	entry := []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 5}}}}
	if res, err := alice.AlterClientQuotas(ctx, entry); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice alters: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}
	if _, err := alice.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describes: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if d, err := admin.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 0 {
		t.Fatalf("after alice's refused alteration: %v %+v, want nothing stored", err, d)
	}
	addACLs(ctx, t, admin, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpAlterConfigs, kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral))
	if res, err := alice.AlterClientQuotas(ctx, entry); err != nil || res[0].Err != nil {
		t.Fatalf("alice alters with ALTER_CONFIGS: %v %+v", err, res)
	}
	if d, err := alice.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 1 {
		t.Fatalf("alice describes with DESCRIBE_CONFIGS: %v %+v", err, d)
	}
}

// failingStore is a sharedStore whose changes fail while fail is set;
// puts counts them.
type failingStore struct {
	*sharedStore
	fail atomic.Bool
	puts atomic.Int64
}

func (s *failingStore) PutSystem(ctx context.Context, ns, key string, value []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: value}})
}

func (s *failingStore) PutSystemAll(ctx context.Context, ns string, entries []store.SystemEntry) error {
	s.puts.Add(1)
	if s.fail.Load() {
		return errors.New("the system store is down")
	}
	return s.sharedStore.PutSystemAll(ctx, ns, entries)
}

// TestAlterClientQuotasAllOrNothing: an entity's operations are stored in
// one change of the system store, so when the store fails none of them
// applies (the entity is
// answered UNKNOWN_SERVER_ERROR and keeps its quotas, here and after a
// reload), as Kafka replays an entity's records together; the other
// entities of the request are not held back by it.
func TestAlterClientQuotasAllOrNothing(t *testing.T) {
	t.Parallel()
	st := &failingStore{sharedStore: &sharedStore{Log: memlog.New(memlog.Config{}), ns: map[string]map[string][]byte{}}}
	gw := kiggytest.Start(t, kiggytest.Options{Log: st})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := newAdmin(t, gw.Addr)
	name := func(s string) *string { return &s }
	entity := kadm.ClientQuotaEntity{{Type: "user", Name: name("carol")}}
	set := func(pbr, rp float64) error {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: pbr}, {Key: "request_percentage", Value: rp}}}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Err
	}
	described := func() string {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range d {
			for _, v := range q.Values {
				out = append(out, fmt.Sprintf("%s %s=%v", q.Entity, v.Key, v.Value))
			}
		}
		return fmt.Sprint(sortedStrings(out))
	}
	if err := set(1000, 10); err != nil {
		t.Fatal(err)
	}
	if n := st.puts.Load(); n != 1 {
		t.Fatalf("an entity's two operations took %d changes of the system store, want 1", n)
	}
	const want = "[{user=carol} producer_byte_rate=1000 {user=carol} request_percentage=10]"
	if got := described(); got != want {
		t.Fatalf("described %s, want %s", got, want)
	}
	st.fail.Store(true)
	if err := set(2000, 20); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("the store failing: %v, want UNKNOWN_SERVER_ERROR", err)
	}
	if got := described(); got != want {
		t.Fatalf("after a failed store, described %s, want the quotas before it: %s", got, want)
	}
}

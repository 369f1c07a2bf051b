package bridge_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/quota"
)

// TestRequestQuota: a client that pipelines requests past its request
// quota (0.1 % of a thread over 11 windows of 10 ms) gets throttle_time_ms
// in its responses, and its connection is muted for that long after each
// (KIP-219), so its requests take at least the sum of the throttles from
// the moment they were sent; a client with another client id on the same
// principal is metered apart and not throttled; the metrics count both
// clients and the throttles.
func TestRequestQuota(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
		Quota: quota.Config{RequestPercentage: 0.1, Samples: 11, Window: 10 * time.Millisecond}}})
	hot := dialClient(t, gw.Addr, "hot")
	const n = 200
	corrs := make([]int32, n)
	sent := time.Now()
	for i := range corrs {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		corrs[i] = hot.send(req)
	}
	throttled := 0
	for _, corr := range corrs {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		hot.recv(corr, resp)
		if resp.ThrottleMillis > 0 {
			throttled++
			if resp.ThrottleMillis > 10 {
				t.Errorf("throttle %d ms, longer than one window (10 ms)", resp.ThrottleMillis)
			}
		}
	}
	took := time.Since(sent)
	if throttled == 0 {
		t.Fatalf("%d pipelined Metadata requests against a 0.1 %% quota: none throttled", n)
	}
	cool := dialClient(t, gw.Addr, "cool")
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	cool.recv(cool.send(req), resp)
	if resp.ThrottleMillis != 0 {
		t.Errorf("another client id is throttled %d ms", resp.ThrottleMillis)
	}
	m := gw.Metrics()
	if got := metricValue(t, m, "kiggy_quota_throttles_total"); got != float64(throttled) {
		t.Errorf("kiggy_quota_throttles_total = %v, want the %d throttled responses", got, throttled)
	}
	if got := metricValue(t, m, "kiggy_quota_clients"); got != 2 {
		t.Errorf("kiggy_quota_clients = %v, want 2 (hot and cool)", got)
	}
	// Each throttle mutes the connection after its request, and the next
	// request is served only after it: the requests took at least the
	// throttles' sum but the last's (at most one window, 10 ms).
	sum := time.Duration(metricValue(t, m, "kiggy_quota_throttle_seconds_total") * float64(time.Second))
	if took < sum-10*time.Millisecond {
		t.Errorf("the requests took %v, less than their throttles' sum %v: the connection was served while muted", took, sum)
	}
	t.Logf("%d of %d requests throttled, %v in all; they took %v", throttled, n, sum.Round(time.Millisecond), took.Round(time.Millisecond))
}

// dialClient is dialRaw with a client id.
func dialClient(t *testing.T, addr, clientID string) *rawConn {
	c, err := kafkawire.Dial(addr, clientID, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c}
}

// TestDescribeClientQuotas: with a request quota set, DescribeClientQuotas
// describes its entity (the default user and the default client id) to a
// filter it passes, as Kafka's ClientQuotaManager filters, and to no
// other; without one, nothing.
func TestDescribeClientQuotas(t *testing.T) {
	t.Parallel()
	with := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Quota: quota.Config{RequestPercentage: 25}, ConnectionCreationRatePerIP: 40}})
	without := kiggytest.Start(t, kiggytest.Options{})
	describe := func(addr string, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
		rc := dialClient(t, addr, "admin")
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = 1
		req.Strict = strict
		req.Components = comps
		resp := kmsg.NewPtrDescribeClientQuotasResponse()
		resp.Version = 1
		rc.recv(rc.send(req), resp)
		return resp
	}
	comp := func(typ string, match int8, name string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType = typ, kmsg.QuotasMatchType(match)
		if match == 0 {
			c.Match = &name
		}
		return c
	}
	type comps = []kmsg.DescribeClientQuotasRequestComponent
	for _, tc := range []struct {
		name       string
		strict     bool
		comps      comps
		client, ip bool  // the entities described
		code       int16 // or the error
	}{
		{name: "everything", client: true, ip: true},
		{name: "default users (kafka-configs --entity-type users --entity-default)", comps: comps{comp("user", 1, "")}, client: true},
		{name: "any client id", comps: comps{comp("client-id", 2, "")}, client: true},
		{name: "user alice", comps: comps{comp("user", 0, "alice")}},
		{name: "any ip", comps: comps{comp("ip", 2, "")}, ip: true},
		{name: "default ip (kafka-configs --entity-type ips --entity-default)", comps: comps{comp("ip", 1, "")}, ip: true},
		{name: "ip 10.0.0.1", comps: comps{comp("ip", 0, "10.0.0.1")}},
		{name: "strict default ip", strict: true, comps: comps{comp("ip", 1, "")}, ip: true},
		{name: "strict default user only", strict: true, comps: comps{comp("user", 1, "")}},
		{name: "strict default user and client id", strict: true, comps: comps{comp("user", 1, ""), comp("client-id", 1, "")}, client: true},
		{name: "ip with user (ClientQuotasImage: INVALID_REQUEST)", comps: comps{comp("ip", 2, ""), comp("user", 2, "")}, code: 42},
	} {
		resp := describe(with.Addr, tc.strict, tc.comps...)
		if resp.ErrorCode != tc.code {
			t.Errorf("%s: error %d, want %d", tc.name, resp.ErrorCode, tc.code)
			continue
		}
		var client, ip int
		for _, e := range resp.Entries {
			switch {
			case len(e.Entity) == 2 && e.Entity[0].Type == "user" && e.Entity[0].Name == nil && e.Entity[1].Type == "client-id" && e.Entity[1].Name == nil:
				client++
				if len(e.Values) != 1 || e.Values[0].Key != "request_percentage" || e.Values[0].Value != 25 {
					t.Errorf("%s: values %+v, want request_percentage 25", tc.name, e.Values)
				}
			case len(e.Entity) == 1 && e.Entity[0].Type == "ip" && e.Entity[0].Name == nil:
				ip++
				if len(e.Values) != 1 || e.Values[0].Key != "connection_creation_rate" || e.Values[0].Value != 40 {
					t.Errorf("%s: values %+v, want connection_creation_rate 40", tc.name, e.Values)
				}
			default:
				t.Errorf("%s: unexpected entity %+v", tc.name, e.Entity)
			}
		}
		if (client == 1) != tc.client || (ip == 1) != tc.ip || client > 1 || ip > 1 {
			t.Errorf("%s: %d default user/client-id and %d default ip entities, want %v and %v", tc.name, client, ip, tc.client, tc.ip)
		}
		if r := describe(without.Addr, tc.strict, tc.comps...); len(r.Entries) != 0 || r.ErrorCode != tc.code {
			t.Errorf("%s: %d entries (error %d) without a quota", tc.name, len(r.Entries), r.ErrorCode)
		}
	}
}

// TestRequestQuotaParkedResponse: a JoinGroup that parks for its group's
// rebalance, sent by a client over its quota, is answered with the
// throttle in its throttle_time_ms and its own correlation id (a parked
// response is patched after the fact, behind the engine's reserved bytes
// and the header). Another connection of the same client keeps it over
// its quota meanwhile.
func TestRequestQuotaParkedResponse(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{
		Quota: quota.Config{RequestPercentage: 0.1, Samples: 11, Window: 10 * time.Millisecond},
		Group: group.Config{InitialRebalanceDelay: 20 * time.Millisecond}}})
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		c, err := kafkawire.Dial(gw.Addr, "joiner", 30*time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			corr, err := c.Send(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 12
			if err := c.Recv(corr, resp); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-flooded }()
	b := dialClient(t, gw.Addr, "joiner")
	for attempt := range 100 {
		group := fmt.Sprintf("quota-group-%d", attempt)
		first := joinGroup(b, group, "")
		if first.ErrorCode != 79 { // MEMBER_ID_REQUIRED
			t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", first.ErrorCode)
		}
		parked := joinGroup(b, group, first.MemberID) // recv checks its correlation id
		if parked.ErrorCode != 0 {
			t.Fatalf("join with member id: error %d", parked.ErrorCode)
		}
		if parked.ThrottleMillis > 0 {
			t.Logf("attempt %d: the parked JoinGroup answered with its correlation id and throttle %d ms", attempt, parked.ThrottleMillis)
			return
		}
	}
	t.Fatal("100 parked JoinGroups of a client over its quota: none answered with a throttle")
}

// joinGroup sends a JoinGroup v5 of a consumer to group and reads its
// answer.
func joinGroup(rc *rawConn, group, memberID string) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.MemberID = group, memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = 5
	rc.recv(rc.send(req), resp)
	return resp
}

// TestControllerMutationQuota: with a controller mutation quota (KIP-599;
// a rate of 0.1 partitions a second over 100 windows of 1 s: a burst of
// 10), a CreateTopics v7 of 14 one-partition topics creates 11 (the 11th
// is admitted at 0 and takes the bucket to −1) and refuses 3 with
// THROTTLING_QUOTA_EXCEEDED, owing up to the 10 s the bucket takes back
// to 0 (less what it refilled while the topics were created);
// the same client's DeleteTopics v5 and CreatePartitions v3 are refused
// while it owes, its validate_only CreateTopics is not charged; another
// client id has a bucket of its own; a CreateTopics v5, before the error
// existed, is admitted past the quota and throttled; the metric counts the
// refusals and DescribeClientQuotas reports the rate.
func TestControllerMutationQuota(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{ControllerMutationRate: 0.1,
		Quota: quota.Config{Samples: 100, Window: time.Second}}})
	create := func(rc *rawConn, v int16, validate bool, topics ...string) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = v, validate, 30_000
		for _, name := range topics {
			tp := kmsg.NewCreateTopicsRequestTopic()
			tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, 1, 1
			if v == 5 {
				tp.NumPartitions = 12
			}
			req.Topics = append(req.Topics, tp)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = v
		rc.recv(rc.send(req), resp)
		return resp
	}
	flood := dialClient(t, gw.Addr, "flood")
	var names []string
	for i := range 14 {
		names = append(names, fmt.Sprintf("mq-%02d", i))
	}
	resp := create(flood, 7, false, names...)
	for i, tp := range resp.Topics {
		want := int16(0)
		if i >= 11 {
			want = 89
		}
		if tp.ErrorCode != want {
			t.Fatalf("topic %d (%s): error %d, want %d", i, tp.Topic, tp.ErrorCode, want)
		}
		if want == 89 && (tp.ErrorMessage == nil || *tp.ErrorMessage != "The throttling quota has been exceeded.") {
			t.Fatalf("topic %s refused with message %v", tp.Topic, tp.ErrorMessage)
		}
	}
	if resp.ThrottleMillis < 5000 || resp.ThrottleMillis > 10_000 {
		t.Fatalf("throttle_time_ms %d, want up to 10,000 (the bucket at −1, refilled at 0.1 a second)", resp.ThrottleMillis)
	}
	if r := create(flood, 7, true, "mq-validate"); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("validate_only over the quota: error %d, want 0 (not charged)", r.Topics[0].ErrorCode)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TopicNames, del.TimeoutMillis = 5, []string{"mq-00"}, 30_000
	dresp := kmsg.NewPtrDeleteTopicsResponse()
	dresp.Version = 5
	flood.recv(flood.send(del), dresp)
	if dresp.Topics[0].ErrorCode != 89 || dresp.ThrottleMillis == 0 {
		t.Fatalf("DeleteTopics v5 while owing: error %d throttle %d, want 89 and a throttle", dresp.Topics[0].ErrorCode, dresp.ThrottleMillis)
	}
	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.Version, grow.TimeoutMillis = 3, 30_000
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = "mq-01", 2
	grow.Topics = append(grow.Topics, gt)
	gresp := kmsg.NewPtrCreatePartitionsResponse()
	gresp.Version = 3
	flood.recv(flood.send(grow), gresp)
	if gresp.Topics[0].ErrorCode != 89 {
		t.Fatalf("CreatePartitions v3 while owing: error %d, want 89", gresp.Topics[0].ErrorCode)
	}
	if r := create(dialClient(t, gw.Addr, "other"), 7, false, "mq-other"); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("another client id: error %d throttle %d, want 0 and 0", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	// v5: no THROTTLING_QUOTA_EXCEEDED; 12 partitions, 2 past the burst.
	if r := create(dialClient(t, gw.Addr, "old"), 5, false, "mq-old"); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis < 15_000 || r.ThrottleMillis > 20_000 {
		t.Fatalf("CreateTopics v5 past the quota: error %d throttle %d ms, want 0 and about 20,000 (2 past the burst at 0.1 a second)", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	if got := metricValue(t, gw.Metrics(), "kiggy_quota_controller_mutation_rejections_total"); got != 5 {
		t.Fatalf("kiggy_quota_controller_mutation_rejections_total = %v, want 5 (3 creations, a deletion, a growth)", got)
	}
	if values := describeQuotaValues(t, gw.Addr); len(values) != 1 || values["controller_mutation_rate"] != 0.1 {
		t.Fatalf("DescribeClientQuotas: %v, want controller_mutation_rate 0.1 alone", values)
	}
}

// describeQuotaValues returns the quota values DescribeClientQuotas v1
// reports for every entity, by key.
func describeQuotaValues(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	dq := kmsg.NewPtrDescribeClientQuotasRequest()
	dq.Version = 1
	dqr := kmsg.NewPtrDescribeClientQuotasResponse()
	dqr.Version = 1
	rc := dialClient(t, addr, "admin")
	rc.recv(rc.send(dq), dqr)
	values := map[string]float64{}
	for _, e := range dqr.Entries {
		for _, v := range e.Values {
			values[v.Key] = v.Value
		}
	}
	return values
}

// throttleSeen counts the throttles a franz-go client was told of.
type throttleSeen struct{ n atomic.Int64 }

func (h *throttleSeen) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestByteRateQuotas: under a producer and a consumer byte rate of
// 100 KiB a second (Kafka's producer_byte_rate and consumer_byte_rate of
// the default user and client id; 11 windows of 100 ms), a franz-go
// producer of 400 KiB, asynchronous, is throttled (its Produce responses carry
// throttle_time_ms, which the client honours) and loses nothing; a raw
// consumer's Fetch right after a full one is answered at once with no
// partitions and a throttle; a franz-go consumer group (fetch sessions)
// reads every record through throttled Fetches; the metrics count both,
// and DescribeClientQuotas reports the rates.
func TestByteRateQuotas(t *testing.T) {
	t.Parallel()
	const rate = 100 << 10
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{ProducerByteRate: rate, ConsumerByteRate: rate,
		Quota: quota.Config{Samples: 11, Window: 100 * time.Millisecond}}})
	const topic = "byte-rate"
	gw.CreateTopic(t, topic, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seen throttleSeen
	p, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ClientID("hot-producer"), kgo.DefaultProduceTopic(topic),
		kgo.WithHooks(&seen), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Incompressible values: the quota counts the request's bytes as
	// sent (compressed), as Kafka's does.
	rng := rand.New(rand.NewPCG(1, 2))
	var failed atomic.Bool
	const n = 400
	var want []string
	for i := range n {
		var raw [500]byte
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		v := fmt.Sprintf("%04d-%x", i, raw)
		want = append(want, v)
		// Asynchronously: the producer goes as fast as it can, past the
		// rate however slow the machine, until the throttles hold it.
		p.Produce(ctx, kgo.StringRecord(v), func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(true)
			}
		})
	}
	if err := p.Flush(ctx); err != nil || failed.Load() {
		t.Fatalf("produce: flush %v, a record failed: %v", err, failed.Load())
	}
	if seen.n.Load() == 0 {
		t.Fatal("400 KiB produced against 100 KiB a second: the producer was never told of a throttle")
	}
	m := gw.Metrics()
	if got := metricValue(t, m, "kiggy_quota_produce_throttles_total"); got == 0 {
		t.Fatal("kiggy_quota_produce_throttles_total = 0")
	}

	rc := dialClient(t, gw.Addr, "raw-reader")
	fetch := func() *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = 12, -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for part := range int32(2) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = part, 1<<20
			rt.Partitions = append(rt.Partitions, fp)
		}
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = req.Version
		rc.recv(rc.send(req), resp)
		return resp
	}
	if r := fetch(); r.ThrottleMillis != 0 || len(r.Topics) != 1 || !slices.ContainsFunc(r.Topics[0].Partitions, func(p kmsg.FetchResponseTopicPartition) bool {
		return len(p.RecordBatches) > 0
	}) {
		t.Fatalf("the first Fetch: throttle %d, %d topics; want records and no throttle", r.ThrottleMillis, len(r.Topics))
	}
	if r := fetch(); r.ThrottleMillis <= 0 || r.ThrottleMillis > 100 || len(r.Topics) != 0 || r.ErrorCode != 0 {
		t.Fatalf("a Fetch right after 400 KiB: throttle %d ms, %d topics, error %d; want no partitions and a throttle of at most one window (100 ms)",
			r.ThrottleMillis, len(r.Topics), r.ErrorCode)
	}

	got := readValues(t, gw.Addr, topic, kgo.ReadUncommitted(), n)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("a consumer under the byte rate read %d records, want all %d", len(got), n)
	}
	m = gw.Metrics()
	if got := metricValue(t, m, "kiggy_quota_fetch_throttles_total"); got < 2 {
		t.Fatalf("kiggy_quota_fetch_throttles_total = %v, want the raw reader's and the consumer's", got)
	}

	if values := describeQuotaValues(t, gw.Addr); values["producer_byte_rate"] != rate || values["consumer_byte_rate"] != rate {
		t.Fatalf("DescribeClientQuotas values %v, want producer_byte_rate and consumer_byte_rate %d", values, rate)
	}
}

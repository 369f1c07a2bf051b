package bridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/quota"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
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
	with := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{Quota: quota.Config{RequestPercentage: 25}}})
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
		if resp.ErrorCode != 0 {
			t.Fatalf("DescribeClientQuotas: error %d", resp.ErrorCode)
		}
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
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   bool
	}{
		{"everything", false, nil, true},
		{"default users (kafka-configs --entity-type users --entity-default)", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, "")}, true},
		{"any client id", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, "")}, true},
		{"user alice", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, "alice")}, false},
		{"an ip entity", false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, "")}, false},
		{"strict default user only", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, "")}, false},
		{"strict default user and client id", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, ""), comp("client-id", 1, "")}, true},
	} {
		resp := describe(with.Addr, tc.strict, tc.comps...)
		if got := len(resp.Entries) == 1; got != tc.want || len(resp.Entries) > 1 {
			t.Errorf("%s: %d entries, want the default entity: %v", tc.name, len(resp.Entries), tc.want)
			continue
		}
		if tc.want {
			e := resp.Entries[0]
			if len(e.Entity) != 2 || e.Entity[0].Type != "user" || e.Entity[0].Name != nil || e.Entity[1].Type != "client-id" || e.Entity[1].Name != nil {
				t.Errorf("%s: entity %+v, want the default user and client id", tc.name, e.Entity)
			}
			if len(e.Values) != 1 || e.Values[0].Key != "request_percentage" || e.Values[0].Value != 25 {
				t.Errorf("%s: values %+v, want request_percentage 25", tc.name, e.Values)
			}
		}
		if n := len(describe(without.Addr, tc.strict, tc.comps...).Entries); n != 0 {
			t.Errorf("%s: %d entries without a quota", tc.name, n)
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

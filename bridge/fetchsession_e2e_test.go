package bridge_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// sessFetch is a Fetch of the given topic → partition → offset list in
// session id/epoch, at version v (names below 13, ids from 13 on).
type sessFetch struct {
	v         int16
	id, epoch int32
	wait      int32
	parts     []sessPart
	forget    []sessPart
}

type sessPart struct {
	topic string
	id    [16]byte
	p     int32
	off   int64
}

func (f sessFetch) request() *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = f.v, f.wait, 1, 1<<20
	req.SessionID, req.SessionEpoch = f.id, f.epoch
	for _, sp := range f.parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != sp.topic || req.Topics[n-1].TopicID != sp.id {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = sp.topic, sp.id
			req.Topics = append(req.Topics, ft)
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = sp.p, sp.off, 1<<20
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, fp)
	}
	for _, sp := range f.forget {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = sp.topic, sp.id, []int32{sp.p}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// do sends f on rc and returns the response and, per "topic-partition",
// the partition answered.
func (f sessFetch) do(t *testing.T, rc *rawConn, names map[[16]byte]string) (*kmsg.FetchResponse, map[string]kmsg.FetchResponseTopicPartition) {
	t.Helper()
	corr := rc.send(f.request())
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = f.v
	rc.recv(corr, resp)
	got := map[string]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.Topics {
		name := rt.Topic
		if f.v >= 13 {
			name = names[rt.TopicID]
		}
		for _, p := range rt.Partitions {
			got[fmt.Sprintf("%s-%d", name, p.Partition)] = p
		}
	}
	return resp, got
}

func keys(m map[string]kmsg.FetchResponseTopicPartition) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TestFetchSessions drives KIP-227 sessions with raw Fetches: a full Fetch
// with epoch 0 creates a session answering every partition; incremental
// Fetches answer only partitions with records or changed watermarks, add
// partitions, forget ForgottenTopicsData, park on all of the session's
// partitions; the session errors (70, 71, 106) carry no topics; epoch −1
// closes.
func TestFetchSessions(t *testing.T) {
	// v7 is the first with sessions, v11 the last with INT32 counts (the
	// rewritten counts keep their width), v12 the first flexible one.
	for _, v := range []int16{7, 11, 12} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { testFetchSessionsAt(t, v) })
	}
}

func testFetchSessionsAt(t *testing.T, v int16) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "sa", 3)
	gw.CreateTopic(t, "sb", 2)
	produceN(t, gw.Addr, "sa", 1, 2) // sa-0: offsets 0, 1
	rc := dialRaw(t, gw.Addr)
	all := []sessPart{{topic: "sa", p: 0}, {topic: "sa", p: 1}, {topic: "sa", p: 2}, {topic: "sb", p: 0}, {topic: "sb", p: 1}}

	resp, got := sessFetch{v: v, epoch: 0, parts: all}.do(t, rc, nil)
	id := resp.SessionID
	if resp.ErrorCode != 0 || id == 0 || len(got) != 5 || len(got["sa-0"].RecordBatches) == 0 || got["sa-0"].HighWatermark != 2 {
		t.Fatalf("full Fetch: code %d session %d partitions %s", resp.ErrorCode, id, keys(got))
	}
	if m := gw.Metrics(); metricValue(t, m, "kiggy_fetch_sessions") != 1 || metricValue(t, m, "kiggy_fetch_session_partitions") != 5 {
		t.Fatalf("metrics after a session was created:\n%s", m)
	}

	// Epoch 1: sa-0 moves to its high watermark; nothing changed since.
	resp, got = sessFetch{v: v, id: id, epoch: 1, wait: 100, parts: []sessPart{{topic: "sa", p: 0, off: 2}}}.do(t, rc, nil)
	if resp.ErrorCode != 0 || resp.SessionID != id || len(got) != 0 {
		t.Fatalf("idle incremental Fetch: code %d session %d partitions %s", resp.ErrorCode, resp.SessionID, keys(got))
	}

	// Epoch 2: a record on sb-1 (still at offset 0 in the session).
	produceN(t, gw.Addr, "sb", 2, 2) // sb-0 and sb-1 one each
	resp, got = sessFetch{v: v, id: id, epoch: 2}.do(t, rc, nil)
	if resp.ErrorCode != 0 || keys(got) != "sb-0,sb-1" || len(got["sb-1"].RecordBatches) == 0 {
		t.Fatalf("incremental Fetch after produce: code %d partitions %s", resp.ErrorCode, keys(got))
	}

	// Epoch 3: sb's offsets move on; sb-0 is forgotten: a record there
	// wakes no one.
	resp, got = sessFetch{v: v, id: id, epoch: 3, wait: 100,
		parts:  []sessPart{{topic: "sb", p: 1, off: 1}},
		forget: []sessPart{{topic: "sb", p: 0}}}.do(t, rc, nil)
	if resp.ErrorCode != 0 || len(got) != 0 {
		t.Fatalf("forgetting: code %d partitions %s", resp.ErrorCode, keys(got))
	}
	produceN(t, gw.Addr, "sb", 1, 1) // sb-0
	start := time.Now()
	resp, got = sessFetch{v: v, id: id, epoch: 4, wait: 300}.do(t, rc, nil)
	if resp.ErrorCode != 0 || len(got) != 0 || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("a forgotten partition answered: code %d partitions %s after %v", resp.ErrorCode, keys(got), time.Since(start))
	}
	if m := gw.Metrics(); metricValue(t, m, "kiggy_fetch_session_partitions") != 4 {
		t.Fatalf("partitions after one was forgotten:\n%s", m)
	}

	// Epoch 5: sb-0 added back from offset 0.
	resp, got = sessFetch{v: v, id: id, epoch: 5, parts: []sessPart{{topic: "sb", p: 0}}}.do(t, rc, nil)
	if resp.ErrorCode != 0 || keys(got) != "sb-0" || len(got["sb-0"].RecordBatches) == 0 || got["sb-0"].HighWatermark != 2 {
		t.Fatalf("re-added partition: code %d partitions %s", resp.ErrorCode, keys(got))
	}

	// A repeated epoch, an unknown id, and v13 (ids) on a session of names.
	for _, tc := range []struct {
		f    sessFetch
		code int16
	}{
		{sessFetch{v: v, id: id, epoch: 5}, 71},
		{sessFetch{v: v, id: id ^ 0x5a5a, epoch: 1}, 70},
		{sessFetch{v: 13, id: id, epoch: 6}, 106},
	} {
		resp, _ = tc.f.do(t, rc, nil)
		if resp.ErrorCode != tc.code || len(resp.Topics) != 0 {
			t.Fatalf("%+v: code %d with %d topics, want %d and none", tc.f, resp.ErrorCode, len(resp.Topics), tc.code)
		}
	}

	// Epoch 6 (the errors did not advance it) parks on every session
	// partition, none named in the request.
	sb0 := sessPart{topic: "sb", p: 0, off: 2}
	corr := rc.send(sessFetch{v: v, id: id, epoch: 6, wait: 10_000, parts: []sessPart{sb0}}.request())
	waitParked(t, gw, 1)
	start = time.Now()
	produceN(t, gw.Addr, "sa", 3, 3) // one record on each of sa-0..2
	resp = kmsg.NewPtrFetchResponse()
	resp.Version = v
	rc.recv(corr, resp)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Topic != "sa" || time.Since(start) > 5*time.Second {
		t.Fatalf("parked incremental Fetch: code %d topics %+v after %v", resp.ErrorCode, resp.Topics, time.Since(start))
	}

	// Epoch −1 closes it: an incremental Fetch then finds no session.
	resp, got = sessFetch{v: v, id: id, epoch: -1, parts: all}.do(t, rc, nil)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(got) != 5 {
		t.Fatalf("closing Fetch: code %d session %d partitions %s", resp.ErrorCode, resp.SessionID, keys(got))
	}
	if resp, _ = (sessFetch{v: v, id: id, epoch: 7}).do(t, rc, nil); resp.ErrorCode != 70 {
		t.Fatalf("closed session: code %d", resp.ErrorCode)
	}
	if m := gw.Metrics(); metricValue(t, m, "kiggy_fetch_sessions") != 0 {
		t.Fatalf("sessions after close:\n%s", m)
	}
}

// TestFetchSessionsByID: v13+ sessions name topics by id; an unknown id
// stays in the session with UNKNOWN_TOPIC_ID, and a v12 incremental Fetch
// of the session is FETCH_SESSION_TOPIC_ID_ERROR.
func TestFetchSessionsByID(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	gw.CreateTopic(t, "sid", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tid := topicIDOf(ctx, t, cl, "sid")
	names := map[[16]byte]string{tid: "sid", {9}: "ghost"}
	rc := dialRaw(t, gw.Addr)
	parts := []sessPart{{id: tid, p: 0}, {id: tid, p: 1}, {id: [16]byte{9}, p: 0}}
	resp, got := sessFetch{v: 13, epoch: 0, parts: parts}.do(t, rc, names)
	id := resp.SessionID
	if id == 0 || len(got) != 3 || got["ghost-0"].ErrorCode != 100 {
		t.Fatalf("full v13 Fetch: session %d partitions %s ghost %d: %+v", id, keys(got), got["ghost-0"].ErrorCode, resp.Topics)
	}
	produceN(t, gw.Addr, "sid", 2, 1) // sid-0
	// The unknown id is answered every time (an error), sid-0 for its record.
	resp, got = sessFetch{v: 13, id: id, epoch: 1}.do(t, rc, names)
	if resp.ErrorCode != 0 || keys(got) != "ghost-0,sid-0" || got["ghost-0"].ErrorCode != 100 {
		t.Fatalf("incremental v13: code %d partitions %s", resp.ErrorCode, keys(got))
	}
	resp, got = sessFetch{v: 18, id: id, epoch: 2, parts: []sessPart{{id: tid, p: 0, off: 1}}, forget: []sessPart{{id: [16]byte{9}, p: 0}}, wait: 50}.do(t, rc, names)
	if resp.ErrorCode != 0 || len(got) != 0 {
		t.Fatalf("incremental v18: code %d partitions %s", resp.ErrorCode, keys(got))
	}
	if resp, _ = (sessFetch{v: 12, id: id, epoch: 3}).do(t, rc, names); resp.ErrorCode != 106 || len(resp.Topics) != 0 {
		t.Fatalf("v12 on a session of ids: code %d", resp.ErrorCode)
	}
}

// TestFetchSessionEviction: with one slot, a new session finds no room while
// the old one is recent, and evicts it once it is stale; with sessions off
// every Fetch is sessionless.
func TestFetchSessionEviction(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{FetchSessionCacheSlots: 1, FetchSessionMinEviction: 300 * time.Millisecond}})
	gw.CreateTopic(t, "se", 2)
	rc := dialRaw(t, gw.Addr)
	one := []sessPart{{topic: "se", p: 0}}
	both := []sessPart{{topic: "se", p: 0}, {topic: "se", p: 1}}
	a, _ := sessFetch{v: 12, parts: one}.do(t, rc, nil)
	b, _ := sessFetch{v: 12, parts: one}.do(t, rc, nil)
	if a.SessionID == 0 || b.SessionID != 0 {
		t.Fatalf("sessions %d, %d: the second should find no slot", a.SessionID, b.SessionID)
	}
	time.Sleep(400 * time.Millisecond)
	b, _ = sessFetch{v: 12, parts: both}.do(t, rc, nil)
	if b.SessionID == 0 {
		t.Fatal("a stale session was not evicted")
	}
	if resp, _ := (sessFetch{v: 12, id: a.SessionID, epoch: 1}).do(t, rc, nil); resp.ErrorCode != 70 {
		t.Fatalf("evicted session: code %d", resp.ErrorCode)
	}
	if m := gw.Metrics(); metricValue(t, m, "kiggy_fetch_session_evictions_total") != 1 {
		t.Fatalf("evictions:\n%s", m)
	}

	off := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{FetchSessionCacheSlots: -1}})
	off.CreateTopic(t, "se", 1)
	rc = dialRaw(t, off.Addr)
	if resp, got := (sessFetch{v: 12, parts: one}).do(t, rc, nil); resp.SessionID != 0 || len(got) != 1 {
		t.Fatalf("sessions off: session %d", resp.SessionID)
	}
	if resp, _ := (sessFetch{v: 12, id: 5, epoch: 1}).do(t, rc, nil); resp.ErrorCode != 70 {
		t.Fatalf("sessions off, incremental: code %d", resp.ErrorCode)
	}
}

// TestFetchSessionsFranzGo: a franz-go consumer (which uses sessions) of
// 200 partitions reads every record while partitions join and leave its
// assignment; its incremental responses carry a few of a topic's 200
// session partitions (a partition count one byte shorter than the one
// written first: wire.RewriteFetchArrayLen).
func TestFetchSessionsFranzGo(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	const parts = 200
	gw.CreateTopic(t, "sf", parts)
	recs := produceN(t, gw.Addr, "sf", parts, 800)
	assign := func(lo, hi int32) map[string]map[int32]kgo.Offset {
		m := map[int32]kgo.Offset{}
		for p := lo; p < hi; p++ {
			m[p] = kgo.NewOffset().AtStart()
		}
		return map[string]map[int32]kgo.Offset{"sf": m}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ConsumePartitions(assign(0, 100)), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[string]int{}
	poll := func(want int) {
		for len(seen) < want {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%d of %d records: %v", len(seen), want, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			fs.EachRecord(func(r *kgo.Record) { seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++ })
		}
	}
	poll(400)
	// Partitions 100..199 join; then all leave but 199, which gets more.
	cl.AddConsumePartitions(assign(100, 200))
	poll(800)
	var drop []int32
	for p := int32(0); p < parts-1; p++ {
		drop = append(drop, p)
	}
	cl.RemoveConsumePartitions(map[string][]int32{"sf": drop})
	more := make([]*kgo.Record, 0, 10)
	for i := range 10 {
		more = append(more, &kgo.Record{Topic: "sf", Partition: parts - 1, Value: []byte(fmt.Sprint(i))})
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.ProduceSync(ctx, more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll(810)
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("record %s consumed %d times", k, n)
		}
	}
	if len(recs) != 800 || len(seen) != 810 {
		t.Fatalf("%d records seen", len(seen))
	}
	if m := gw.Metrics(); metricValue(t, m, "kiggy_fetch_sessions_created_total") == 0 {
		t.Fatalf("franz-go used no session:\n%s", m)
	}
}

// TestFetchSessionsACL: authorization applies to every Fetch of a session,
// as to a sessionless one: a partition the principal may not READ is
// answered TOPIC_AUTHORIZATION_FAILED in every incremental response (an
// error is always sent), and another principal that names the session
// (sessions are not bound to a connection, as in Kafka) reads nothing it
// may not.
func TestFetchSessionsACL(t *testing.T) {
	gw := aclGateway(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(aclClient(t, gw.Addr, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "acl-ok", "acl-no"); err != nil {
		t.Fatal(err)
	}
	addACLs(ctx, t, adm, kadm.NewACLs().Allow("User:alice").Topics("acl-ok").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	produceAs := aclClient(t, gw.Addr, "admin", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := produceAs.ProduceSync(ctx, &kgo.Record{Topic: "acl-ok", Value: []byte("a")}, &kgo.Record{Topic: "acl-no", Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dial := func(id string) *rawConn {
		c, err := kafkawire.Dial(gw.Addr, id, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &rawConn{t: t, Conn: c}
	}
	alice, bob := dial("alice"), dial("bob")
	both := []sessPart{{topic: "acl-ok", p: 0}, {topic: "acl-no", p: 0}}
	resp, got := sessFetch{v: 12, parts: both}.do(t, alice, nil)
	id := resp.SessionID
	if id == 0 || len(got["acl-ok-0"].RecordBatches) == 0 || got["acl-no-0"].ErrorCode != 29 || len(got["acl-no-0"].RecordBatches) != 0 {
		t.Fatalf("alice's full Fetch: session %d, %s, acl-no code %d", id, keys(got), got["acl-no-0"].ErrorCode)
	}
	resp, got = sessFetch{v: 12, id: id, epoch: 1, parts: []sessPart{{topic: "acl-ok", p: 0, off: 1}}}.do(t, alice, nil)
	if resp.ErrorCode != 0 || keys(got) != "acl-no-0" || got["acl-no-0"].ErrorCode != 29 {
		t.Fatalf("alice's incremental Fetch: %s, acl-no code %d", keys(got), got["acl-no-0"].ErrorCode)
	}
	// Bob names alice's session from offset 0: both partitions refused.
	resp, got = sessFetch{v: 12, id: id, epoch: 2, parts: []sessPart{{topic: "acl-ok", p: 0}}}.do(t, bob, nil)
	if resp.ErrorCode != 0 || got["acl-ok-0"].ErrorCode != 29 || got["acl-no-0"].ErrorCode != 29 ||
		len(got["acl-ok-0"].RecordBatches) != 0 || len(got["acl-no-0"].RecordBatches) != 0 {
		t.Fatalf("bob in alice's session: %s, codes %d %d", keys(got), got["acl-ok-0"].ErrorCode, got["acl-no-0"].ErrorCode)
	}
}

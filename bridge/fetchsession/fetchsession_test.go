package fetchsession

import (
	"testing"
	"time"
	"unsafe"

	"github.com/kiggy-io/kiggy/wire"
)

// fullReq is a full Fetch of topic/partition pairs, by name.
func fullReq(tps ...any) *wire.FetchRequest {
	r := &wire.FetchRequest{SessionEpoch: 0}
	for i := 0; i < len(tps); i += 2 {
		name, p := tps[i].(string), int32(tps[i+1].(int))
		if n := len(r.Topics); n == 0 || r.Topics[n-1].Topic != name {
			r.Topics = append(r.Topics, wire.FetchRequestTopic{Topic: name})
		}
		t := &r.Topics[len(r.Topics)-1]
		t.Partitions = append(t.Partitions, wire.FetchRequestTopicPartition{Partition: p, FetchOffset: 10, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1})
	}
	return r
}

func outcomes(n int, hw int64) []Outcome {
	out := make([]Outcome, n)
	for i := range out {
		out[i].Sent = Sent{HighWatermark: hw, LastStableOffset: hw, LogStartOffset: 0}
	}
	return out
}

// listed is the topic/partition list a rewritten request names.
func listed(r *wire.FetchRequest) []Key {
	var ks []Key
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			ks = append(ks, Key{Topic: t.Topic, TopicID: t.TopicID, Partition: p.Partition})
		}
	}
	return ks
}

func TestCreateIncrementalCommit(t *testing.T) {
	c := New(10, DefaultMaxPartitions, DefaultMinEviction)
	now := time.Unix(1000, 0)
	id := c.Create(now, fullReq("a", 0, "a", 1, "b", 0), false, false, outcomes(3, 5))
	if id <= 0 {
		t.Fatalf("Create = %d", id)
	}
	if st := c.Stats(); st.Sessions != 1 || st.Partitions != 3 {
		t.Fatalf("stats %+v", st)
	}
	// Epoch 1: update a-1's offset, add c-7, forget b-0.
	req := fullReq("a", 1, "c", 7)
	req.Topics[0].Partitions[0].FetchOffset = 42
	req.SessionID, req.SessionEpoch = id, 1
	req.ForgottenTopics = []wire.FetchRequestForgottenTopic{{Topic: "b", Partitions: []int32{0, 9}}}
	tk, prev, code := c.Incremental(now, req, false, nil)
	if code != wire.NoError || tk.Epoch != 2 {
		t.Fatalf("Incremental = %v epoch %d", code, tk.Epoch)
	}
	want := []Key{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "c", Partition: 7}}
	got := listed(req)
	if len(got) != len(want) || len(req.Topics) != 2 || len(req.ForgottenTopics) != 0 {
		t.Fatalf("rewritten %v (%d topics), want %v", got, len(req.Topics), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rewritten %v, want %v", got, want)
		}
	}
	if req.Topics[0].Partitions[1].FetchOffset != 42 || req.Topics[0].Partitions[0].FetchOffset != 10 {
		t.Fatalf("offsets %+v", req.Topics[0].Partitions)
	}
	if prev[0].HighWatermark != 5 || prev[2].HighWatermark != -1 {
		t.Fatalf("prev %+v", prev)
	}
	if c.Stats().Partitions != 3 {
		t.Fatalf("partitions %d", c.Stats().Partitions)
	}
	// a-0 carries records: it moves to the end.
	out := outcomes(3, 6)
	out[0].Records = true
	out[2].Err = true
	if !tk.Commit(out) {
		t.Fatal("Commit refused")
	}
	req2 := &wire.FetchRequest{SessionID: id, SessionEpoch: 2}
	_, prev, code = c.Incremental(now, req2, false, prev)
	if code != wire.NoError {
		t.Fatal(code)
	}
	got = listed(req2)
	want = []Key{{Topic: "a", Partition: 1}, {Topic: "c", Partition: 7}, {Topic: "a", Partition: 0}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if prev[1].HighWatermark != -1 || prev[0].HighWatermark != 6 {
		t.Fatalf("prev after an error %+v", prev)
	}
	// A stale ticket (epoch 2) no longer commits.
	if tk.Commit(out) {
		t.Fatal("a stale ticket committed")
	}
}

func TestIncrementalErrors(t *testing.T) {
	c := New(10, DefaultMaxPartitions, DefaultMinEviction)
	now := time.Unix(1000, 0)
	id := c.Create(now, fullReq("a", 0), false, false, outcomes(1, 0))
	for _, tc := range []struct {
		id, epoch int32
		ids       bool
		want      wire.ErrorCode
	}{
		{id + 1, 1, false, wire.FetchSessionIDNotFound},
		{id, 2, false, wire.InvalidFetchSessionEpoch},
		{id, 1, true, wire.FetchSessionTopicIDError},
	} {
		req := &wire.FetchRequest{SessionID: tc.id, SessionEpoch: tc.epoch}
		if _, _, code := c.Incremental(now, req, tc.ids, nil); code != tc.want {
			t.Errorf("session %d epoch %d ids %v: %v, want %v", tc.id, tc.epoch, tc.ids, code, tc.want)
		}
	}
	// Forgetting the last partition closes the session.
	req := &wire.FetchRequest{SessionID: id, SessionEpoch: 1,
		ForgottenTopics: []wire.FetchRequestForgottenTopic{{Topic: "a", Partitions: []int32{0}}}}
	if _, _, code := c.Incremental(now, req, false, nil); code != ErrSessionless {
		t.Fatalf("emptied: %v", code)
	}
	if c.Get(id) != nil || c.Stats().Sessions != 0 || c.Stats().Partitions != 0 {
		t.Fatalf("emptied session kept: %+v", c.Stats())
	}
	id = c.Create(now, fullReq("a", 0), false, false, outcomes(1, 0))
	if !c.Remove(id) || c.Remove(id) {
		t.Fatal("Remove")
	}
}

func TestEviction(t *testing.T) {
	c := New(2, DefaultMaxPartitions, DefaultMinEviction)
	t0 := time.Unix(1000, 0)
	a := c.Create(t0, fullReq("a", 0, "a", 1, "a", 2), false, false, outcomes(3, 0))
	b := c.Create(t0, fullReq("b", 0, "b", 1, "b", 2, "b", 3, "b", 4), false, false, outcomes(5, 0))
	if a == 0 || b == 0 {
		t.Fatal("no room in an empty cache")
	}
	// Full, nothing stale and nothing older than the minimum eviction time.
	if id := c.Create(t0.Add(time.Second), fullReq("c", 0, "c", 1, "c", 2, "c", 3, "c", 4, "c", 5), false, false, outcomes(6, 0)); id != 0 {
		t.Fatalf("evicted a recent session for %d", id)
	}
	// b is used after 121 s (evictable by all from then on); a is stale.
	t1 := t0.Add(121 * time.Second)
	req := &wire.FetchRequest{SessionID: b, SessionEpoch: 1}
	if _, _, code := c.Incremental(t1, req, false, nil); code != wire.NoError {
		t.Fatal(code)
	}
	d := c.Create(t1, fullReq("d", 0), false, false, outcomes(1, 0))
	if d == 0 || c.Get(a) != nil || c.Get(b) == nil {
		t.Fatalf("stale a not evicted: d=%d", d)
	}
	if c.Stats().Evictions != 1 {
		t.Fatalf("evictions %d", c.Stats().Evictions)
	}
	// Nothing stale now: a session of 3 partitions evicts b (5, old
	// enough)? No: it is smaller. One of 6 does.
	if id := c.Create(t1, fullReq("e", 0, "e", 1, "e", 2), false, false, outcomes(3, 0)); id != 0 {
		t.Fatal("a smaller session evicted a larger one")
	}
	f := c.Create(t1, fullReq("f", 0, "f", 1, "f", 2, "f", 3, "f", 4, "f", 5), false, false, outcomes(6, 0))
	if f == 0 || c.Get(b) != nil || c.Get(d) == nil {
		t.Fatal("the larger session did not evict b")
	}
	if st := c.Stats(); st.Sessions != 2 || st.Partitions != 7 || st.Evictions != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPartitionCap: no session is created past the partition cap, and an
// incremental Fetch that would pass it closes its session (sessionless).
func TestPartitionCap(t *testing.T) {
	c := New(10, 4, DefaultMinEviction)
	now := time.Unix(1000, 0)
	a := c.Create(now, fullReq("a", 0, "a", 1, "a", 2), false, false, outcomes(3, 0))
	if a == 0 {
		t.Fatal("no session under the cap")
	}
	if id := c.Create(now, fullReq("b", 0, "b", 1), false, false, outcomes(2, 0)); id != 0 {
		t.Fatal("a session past the cap")
	}
	req := fullReq("a", 1, "a", 3) // one new
	req.SessionID, req.SessionEpoch = a, 1
	if _, _, code := c.Incremental(now, req, false, nil); code != wire.NoError {
		t.Fatalf("up to the cap: %v", code)
	}
	req = fullReq("a", 4)
	req.SessionID, req.SessionEpoch = a, 2
	if _, _, code := c.Incremental(now, req, false, nil); code != ErrSessionless {
		t.Fatalf("past the cap: %v", code)
	}
	if st := c.Stats(); st.Sessions != 0 || st.Partitions != 0 || st.Refused != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestNoAliasing: names a session keeps survive the frame they came from.
func TestNoAliasing(t *testing.T) {
	frame := []byte("topicAtopicB")
	view := func(i, j int) string { return unsafe.String(&frame[i], j-i) }
	c := New(10, DefaultMaxPartitions, DefaultMinEviction)
	now := time.Unix(1000, 0)
	full := &wire.FetchRequest{Topics: []wire.FetchRequestTopic{{Topic: view(0, 6), Partitions: []wire.FetchRequestTopicPartition{{Partition: 0}}}}}
	id := c.Create(now, full, false, false, outcomes(1, 0))
	inc := &wire.FetchRequest{SessionID: id, SessionEpoch: 1,
		Topics: []wire.FetchRequestTopic{{Topic: view(6, 12), Partitions: []wire.FetchRequestTopicPartition{{Partition: 3}}}}}
	if _, _, code := c.Incremental(now, inc, false, nil); code != wire.NoError {
		t.Fatal(code)
	}
	copy(frame, "xxxxxxxxxxxx")
	inc = &wire.FetchRequest{SessionID: id, SessionEpoch: 2}
	if _, _, code := c.Incremental(now, inc, false, nil); code != wire.NoError {
		t.Fatal(code)
	}
	if got := listed(inc); got[0].Topic != "topicA" || got[1].Topic != "topicB" {
		t.Fatalf("names %v after the frame was reused", got)
	}
}

func TestNextEpoch(t *testing.T) {
	for _, tc := range [][2]int32{{-1, -1}, {0, 1}, {5, 6}, {1<<31 - 1, 1}} {
		if got := NextEpoch(tc[0]); got != tc[1] {
			t.Errorf("NextEpoch(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

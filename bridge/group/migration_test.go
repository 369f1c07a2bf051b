package group

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// subscriptionBytes encodes a ConsumerProtocolSubscription v1 (topics, null
// user data, owned partitions).
func subscriptionBytes(topics []string, owned map[string][]int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	names := make([]string, 0, len(owned))
	for t := range owned {
		names = append(names, t)
	}
	slices.Sort(names)
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, t := range names {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(owned[t])))
		for _, p := range owned[t] {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	return b
}

// classicClient is a cooperative classic member as the Java client drives
// it: it joins with its owned partitions, syncs, and rejoins when told.
type classicClient struct {
	t     *testing.T
	h     *harness
	id    string
	gen   int32
	owned []int32 // of topic "t"
}

func (cc *classicClient) joinReq() JoinRequest {
	r := consumerJoin("g", cc.id, "client-"+cc.id, "cooperative-sticky")
	r.Protocols[0].Metadata = subscriptionBytes([]string{"t"}, map[string][]int32{"t": cc.owned})
	return r
}

// rejoin joins and syncs once, keeping what the assignment says.
func (cc *classicClient) rejoin() {
	cc.t.Helper()
	jr := cc.h.join(cc.joinReq())
	cc.h.clock.Advance(10 * time.Millisecond)
	r := jr.result()
	if r.Error != 0 {
		cc.t.Fatalf("%s: join error %d", cc.id, r.Error)
	}
	cc.gen = r.GenerationID
	sr := cc.h.sync(SyncRequest{GroupID: "g", GenerationID: cc.gen, MemberID: cc.id, ProtocolType: "consumer", HasProtocolType: true,
		ProtocolName: "cooperative-sticky", HasProtocolName: true}).result()
	if sr.Error != 0 {
		cc.t.Fatalf("%s: sync error %d", cc.id, sr.Error)
	}
	parts, ok := parseAssignment(sr.Assignment)
	if !ok {
		cc.t.Fatalf("%s: assignment does not parse", cc.id)
	}
	cc.owned = parts["t"]
}

func (cc *classicClient) heartbeat() int16 {
	return cc.h.c.Heartbeat("g", cc.id, "", false, cc.gen)
}

// TestOnlineUpgradeAndDowngrade: a classic group of two cooperative
// members is upgraded when a consumer-protocol member joins (each classic
// member keeps its partitions until it rejoins and gives up what moves),
// the three share the partitions without one owned twice, and when the
// consumer-protocol member leaves the group is classic again and its
// members rejoin it.
func TestOnlineUpgradeAndDowngrade(t *testing.T) {
	topics := fakeTopics{"t": 6}
	h := newHarness(t, Config{Topics: func() TopicLookup { return topics }})
	a := &classicClient{t: t, h: h}
	b := &classicClient{t: t, h: h}
	// The classic group forms: a leads and assigns 0–2 to itself, 3–5 to b.
	ja, jb := h.join(a.joinReq()), h.join(b.joinReq())
	h.clock.Advance(2 * DefaultInitialRebalanceDelay)
	gen := ja.result().GenerationID
	if ja.result().Error != 0 || jb.result().Error != 0 {
		t.Fatalf("classic joins: %+v %+v", ja.result(), jb.result())
	}
	a.id, b.id = ja.result().MemberID, jb.result().MemberID
	a.gen, b.gen = gen, gen
	sb := h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: b.id})
	h.sync(SyncRequest{GroupID: "g", GenerationID: gen, MemberID: a.id, Assignments: []Assignment{
		{MemberID: a.id, Assignment: encodeAssignment(1, map[string][]int32{"t": {0, 1, 2}})},
		{MemberID: b.id, Assignment: encodeAssignment(1, map[string][]int32{"t": {3, 4, 5}})},
	}}).result()
	sb.result()
	a.owned, b.owned = []int32{0, 1, 2}, []int32{3, 4, 5}

	// A consumer-protocol member joins: the group is upgraded.
	c := &cmemberClient{t: t, c: h.c, topics: topics, group: "g", id: "c", names: []string{"t"}}
	c.beat()
	d := h.c.DescribeConsumerGroup("g")
	if d.Error != 0 || len(d.Members) != 3 {
		t.Fatalf("after the upgrade: %+v", d)
	}
	for _, m := range d.Members {
		if m.Classic != (m.MemberID != "c") {
			t.Fatalf("member %s classic=%v", m.MemberID, m.Classic)
		}
	}
	// The classic members are told to rejoin, and do, until all settle.
	owners := func() map[int32]string {
		own := map[int32]string{}
		for _, x := range []struct {
			id string
			ps []int32
		}{{a.id, a.owned}, {b.id, b.owned}, {"c", c.set2()}} {
			for _, p := range x.ps {
				if o, ok := own[p]; ok {
					t.Fatalf("partition %d owned by %s and %s", p, o, x.id)
				}
				own[p] = x.id
			}
		}
		return own
	}
	for range 10 {
		for _, cc := range []*classicClient{a, b} {
			if code := cc.heartbeat(); code == errRebalanceInProgress {
				cc.rejoin()
			} else if code != 0 {
				t.Fatalf("%s heartbeat: %d", cc.id, code)
			}
			owners()
		}
		c.beat()
		owners()
	}
	if own := owners(); len(own) != 6 || len(a.owned) != 2 || len(b.owned) != 2 || c.count() != 2 {
		t.Fatalf("after migration: a %v, b %v, c %v", a.owned, b.owned, c.owned)
	}
	// A commit by a classic member at its generation is accepted.
	if code := h.c.ValidateCommit("g", a.id, "", false, a.gen); code != 0 {
		t.Fatalf("classic member's commit: %d", code)
	}

	// The consumer-protocol member leaves: the group is classic again.
	if res := h.c.ConsumerGroupHeartbeat(c.req(leaveEpoch, false)); res.Error != 0 {
		t.Fatalf("leave: %d", res.Error)
	}
	if d := h.c.Describe("g"); d.Error != 0 || d.State != "PreparingRebalance" || len(d.Members) != 2 {
		t.Fatalf("after the downgrade: %+v", d)
	}
	if ls := h.c.List(); len(ls) != 1 || ls[0].Type != "classic" {
		t.Fatalf("list after the downgrade: %+v", ls)
	}
	if code := a.heartbeat(); code != errRebalanceInProgress {
		t.Fatalf("a after the downgrade: heartbeat %d, want REBALANCE_IN_PROGRESS", code)
	}
	ja, jb = h.join(a.joinReq()), h.join(b.joinReq())
	h.clock.Advance(2 * DefaultInitialRebalanceDelay)
	if ja.result().Error != 0 || jb.result().Error != 0 || ja.result().GenerationID <= gen {
		t.Fatalf("rejoining the classic group: %+v %+v", ja.result(), jb.result())
	}
}

// set2 is the member's partitions of the one topic.
func (m *cmemberClient) set2() []int32 {
	var out []int32
	for _, tp := range m.owned {
		out = append(out, tp.Partitions...)
	}
	return out
}

func TestEmbeddedProtocolCodecs(t *testing.T) {
	b := subscriptionBytes([]string{"x", "y"}, map[string][]int32{"x": {1, 2}})
	s, ok := parseSubscription(b)
	if !ok || !slices.Equal(s.topics, []string{"x", "y"}) || !slices.Equal(s.owned["x"], []int32{1, 2}) {
		t.Fatalf("subscription: %+v %v", s, ok)
	}
	a := encodeAssignment(3, map[string][]int32{"x": {4}, "a": {0, 9}})
	parts, ok := parseAssignment(a)
	if !ok || !slices.Equal(parts["x"], []int32{4}) || !slices.Equal(parts["a"], []int32{0, 9}) {
		t.Fatalf("assignment: %v %v", parts, ok)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 1, 0, 0, 0, 5}, {0xff, 0xff}} {
		if _, ok := parseSubscription(bad); ok {
			t.Fatalf("subscription %x parsed", bad)
		}
	}
}

// FuzzEmbeddedProtocol: the subscription and assignment decoders never
// panic, and what encodeAssignment writes parses back.
func FuzzEmbeddedProtocol(f *testing.F) {
	f.Add(subscriptionBytes([]string{"t"}, map[string][]int32{"t": {0}}))
	f.Add(encodeAssignment(0, map[string][]int32{"t": {1, 2}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseSubscription(b)
		if parts, ok := parseAssignment(b); ok {
			back, ok2 := parseAssignment(encodeAssignment(1, parts))
			if !ok2 || len(back) != len(parts) {
				t.Fatalf("re-encoded assignment: %v vs %v", back, parts)
			}
		}
	})
}

// TestUpgradeKeepsNoAliasedKey: the request's group id aliases a buffer the
// gateway reuses; the upgraded group must be found under its own copy.
func TestUpgradeKeepsNoAliasedKey(t *testing.T) {
	topics := fakeTopics{"t": 2}
	h := newHarness(t, Config{Topics: func() TopicLookup { return topics }})
	a := &classicClient{t: t, h: h}
	ja := h.join(a.joinReq())
	h.clock.Advance(2 * DefaultInitialRebalanceDelay)
	a.id, a.gen = ja.result().MemberID, ja.result().GenerationID
	h.sync(SyncRequest{GroupID: "g", GenerationID: a.gen, MemberID: a.id, Assignments: []Assignment{
		{MemberID: a.id, Assignment: encodeAssignment(1, map[string][]int32{"t": {0, 1}})}}}).result()
	buf := []byte("g")
	c := &cmemberClient{t: t, c: h.c, topics: topics, group: unsafe.String(&buf[0], len(buf)), id: "c", names: []string{"t"}}
	c.beat()
	buf[0] = 'x' // the request buffer is reused
	c.group = "g"
	c.beat()
	if d := h.c.DescribeConsumerGroup("g"); d.Error != 0 || len(d.Members) != 2 {
		t.Fatalf("after the upgrade: %+v", d)
	}
}

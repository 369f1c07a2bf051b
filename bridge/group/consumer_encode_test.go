package group

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// records returns every record of cg's stored form, by key: what the
// store holds of cg once its changes are written. cg is locked.
func (cg *cgroup) records() map[string][]byte {
	out := map[string][]byte{ConsumerGroupHeadKey(cg.id): cg.appendHead(nil)}
	for id, m := range cg.members {
		out[ConsumerGroupMemberKey(cg.id, id)] = cg.appendMemberRecord(nil, m)
	}
	return out
}

// recordsReference is records written with encoding/json: the oracle the
// hand-written JSON must equal byte for byte.
func (cg *cgroup) recordsReference() map[string][]byte {
	head, err := json.Marshal(storedGroupHead{V: 2, Incarnation: cg.incarnation, Epoch: cg.epoch, AssignmentEpoch: cg.assignmentEpoch,
		Assignor: cg.assignorName, SubsHash: cg.subsHash, Members: len(cg.members)})
	if err != nil {
		panic(err)
	}
	out := map[string][]byte{ConsumerGroupHeadKey(cg.id): head}
	for id, m := range cg.members {
		sm := storedMember{ID: m.id, Epoch: m.epoch, PreviousEpoch: m.previousEpoch, State: uint8(m.state),
			ClientID: m.clientID, ClientHost: m.clientHost, RebalanceMs: m.rebalance.Milliseconds(),
			Names: m.names, Assignor: m.assignor, Assigned: storePartitions(m.assigned), Revoking: storePartitions(m.revoking)}
		if m.hasInstance {
			sm.InstanceID = &m.instanceID
		}
		if m.hasRack {
			sm.RackID = &m.rackID
		}
		if m.hasRegex {
			sm.Regex = &m.regex
		}
		if m.classic != nil {
			sm.Classic = &storedClassic{SessionMs: m.classic.session.Milliseconds()}
			for _, p := range m.classic.protocols {
				sm.Classic.Protocols = append(sm.Classic.Protocols, storedProtocol(p))
			}
		}
		r := storedMemberRecord{storedMember: sm, Incarnation: cg.incarnation}
		if t, ok := cg.target[id]; ok {
			sp := storePartitions(t)
			r.Target = &sp
		}
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		out[ConsumerGroupMemberKey(cg.id, id)] = b
	}
	return out
}

func storePartitions(s partitionSet) storedPartns {
	out := make(storedPartns, len(s))
	for t, ps := range s {
		if len(ps) > 0 {
			out[hex.EncodeToString(t[:])] = slices.Clone(ps)
		}
	}
	return out
}

// randomGroup is a consumer group with every field of the stored form
// drawn at random, strings included: HTML characters, quotes, control
// characters, U+2028, invalid UTF-8.
func randomGroup(rng *rand.Rand) *cgroup {
	strs := []string{"", "a", "consumer-1", "<&>", `q"b\s`, "tab\tnl\n\b\f\x01\x1f\x7f", "é ü 日本", "\u2028\u2029", "\xff\xfe bad", "ok.host/127.0.0.1"}
	str := func() string { return strs[rng.IntN(len(strs))] + fmt.Sprint(rng.IntN(3)) }
	parts := func() partitionSet {
		s := partitionSet{}
		for range rng.IntN(4) {
			var id [16]byte
			for i := range id {
				id[i] = byte(rng.IntN(256))
			}
			var ps []int32
			for p := range int32(rng.IntN(5)) {
				if rng.IntN(2) == 0 {
					ps = append(ps, p*int32(rng.IntN(1000)))
				}
			}
			s[id] = ps // sometimes empty: left out
		}
		return s
	}
	cg := &cgroup{id: str(), incarnation: rng.Uint64(), epoch: rng.Int32(), assignmentEpoch: rng.Int32() - 1<<30, subsHash: rng.Uint64(),
		members: map[string]*cmember{}, target: map[string]partitionSet{}}
	if rng.IntN(2) == 0 {
		cg.assignorName = str()
	}
	for range rng.IntN(6) {
		m := &cmember{id: str() + fmt.Sprint(rng.Int()), epoch: rng.Int32(), previousEpoch: -rng.Int32(), state: memberState(rng.IntN(3)),
			clientID: str(), clientHost: str(), rebalance: time.Duration(rng.Int64N(1 << 40)), assignor: str(),
			assigned: parts(), revoking: parts()}
		if rng.IntN(3) == 0 {
			m.assigned = nil
		}
		m.instanceID, m.hasInstance = str(), rng.IntN(2) == 0
		m.rackID, m.hasRack = str(), rng.IntN(2) == 0
		m.regex, m.hasRegex = str(), rng.IntN(2) == 0
		for range rng.IntN(3) {
			m.names = append(m.names, str())
		}
		if rng.IntN(3) == 0 {
			m.classic = &classicInfo{session: time.Duration(rng.Int64N(1 << 40))}
			for range rng.IntN(3) {
				p := Protocol{Name: str()}
				if rng.IntN(3) > 0 {
					p.Metadata = make([]byte, rng.IntN(20))
					for i := range p.Metadata {
						p.Metadata[i] = byte(rng.IntN(256))
					}
				}
				m.classic.protocols = append(m.classic.protocols, p)
			}
			if len(m.classic.protocols) == 0 && rng.IntN(2) == 0 {
				m.classic.protocols = []Protocol{}
			}
		}
		cg.members[m.id] = m
		if rng.IntN(4) > 0 {
			cg.target[m.id] = parts()
		}
	}
	if rng.IntN(4) == 0 {
		cg.target[str()] = parts() // a target of a member gone
	}
	return cg
}

// TestConsumerGroupEncodeSameAsJSON: the records written by hand are those
// encoding/json writes, byte for byte, for 20,000 random groups.
func TestConsumerGroupEncodeSameAsJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20_000 {
		cg := randomGroup(rng)
		got, want := cg.records(), cg.recordsReference()
		for k, w := range want {
			if string(got[k]) != string(w) {
				t.Fatalf("group %d, record %q:\n got %s\nwant %s", i, k, got[k], w)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("group %d: %d records, want %d", i, len(got), len(want))
		}
	}
}

// bigGroup is a converged-looking group of n members, one partition each.
func bigGroup(n int) *cgroup {
	cg := &cgroup{c: newCoordinator(Config{}, newFakeClock()), id: "g", incarnation: 7, epoch: 1000, assignmentEpoch: 1000, subsHash: 42,
		members: map[string]*cmember{}, target: map[string]partitionSet{}, touchedAll: true}
	topic := topicID("t")
	for i := range n {
		m := &cmember{id: fmt.Sprintf("member-%022d", i), epoch: 1000, previousEpoch: 999, clientID: "consumer-app-1",
			clientHost: "/127.0.0.1", rebalance: 45 * time.Second, names: []string{"t"},
			assigned: partitionSet{topic: {int32(i)}}, revoking: partitionSet{}}
		cg.members[m.id] = m
		cg.target[m.id] = partitionSet{topic: {int32(i)}}
	}
	return cg
}

// BenchmarkConsumerGroupEncode: what a change of a group of 1,000 members
// costs its writer. "whole" encodes every record (a group's first write,
// or the next after a failed one), by hand and, side by side, with
// encoding/json; "one-member" is the change after one member's epoch
// moved, which encodes and writes that member's record ("stored-B/op" is
// what the change writes).
func BenchmarkConsumerGroupEncode(b *testing.B) {
	cg := bigGroup(1000)
	size := func(m map[string][]byte) (n int) {
		for k, v := range m {
			n += len(k) + len(v)
		}
		return n
	}
	for _, impl := range []struct {
		name string
		f    func() map[string][]byte
	}{{"whole/by-hand", cg.records}, {"whole/encoding-json", cg.recordsReference}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = size(impl.f())
			}
			b.ReportMetric(float64(n), "stored-B/op")
		})
	}
	b.Run("one-member", func(b *testing.B) {
		b.ReportAllocs()
		cg.change()
		m := cg.members["member-0000000000000000000500"]
		var n int
		for b.Loop() {
			m.epoch++
			cg.touch(m.id)
			n = 0
			for _, e := range cg.change().Entries {
				n += len(e.Key) + len(e.Value)
			}
		}
		b.ReportMetric(float64(n), "stored-B/op")
	})
}

package group

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// assignUniformQuadratic is assignUniform before it indexed the previous
// owners and sorted once a pass: the reference TestAssignUniformSameAsBefore
// compares it with.
func assignUniformQuadratic(in assignInput) map[string]partitionSet {
	out := make(map[string]partitionSet, len(in.members))
	load := make(map[string]int, len(in.members))
	byID := make(map[string]*cmember, len(in.members))
	for _, m := range in.members {
		out[m.id] = partitionSet{}
		byID[m.id] = m
	}
	type part struct {
		topic topicMeta
		p     int32
	}
	eligible := func(m *cmember, t topicMeta) bool { return in.subscribes(m, t.name) }
	// 1. Keep each partition with its previous owner if still eligible.
	var free []part
	for _, t := range in.topics {
		for p := int32(0); p < t.partitions; p++ {
			owner := ""
			for id, set := range in.previous {
				if m := byID[id]; m != nil && eligible(m, t) && slices.Contains(set[t.id], p) {
					owner = id
					break
				}
			}
			if owner == "" {
				free = append(free, part{t, p})
				continue
			}
			out[owner][t.id] = append(out[owner][t.id], p)
			load[owner]++
		}
	}
	// 2. Each free partition to the least loaded eligible member.
	for _, fp := range free {
		best := ""
		for _, m := range in.members {
			if eligible(m, fp.topic) && (best == "" || load[m.id] < load[best]) {
				best = m.id
			}
		}
		if best != "" {
			out[best][fp.topic.id] = append(out[best][fp.topic.id], fp.p)
			load[best]++
		}
	}
	// 3. Move partitions from the most to the least loaded eligible members
	// until no move narrows the spread: each move lowers the sum of squared
	// loads, so this ends.
	topicOf := make(map[[16]byte]topicMeta, len(in.topics))
	for _, t := range in.topics {
		topicOf[t.id] = t
	}
	for moved := true; moved; {
		moved = false
		for _, from := range membersByLoadQuadratic(in.members, load, true) {
			for _, to := range membersByLoadQuadratic(in.members, load, false) {
				if load[to.id]+1 >= load[from.id] {
					break
				}
				if tid, p, ok := movable(&in, out[from.id], to, topicOf); ok {
					set := out[from.id]
					set[tid] = slices.DeleteFunc(set[tid], func(x int32) bool { return x == p })
					out[to.id][tid] = append(out[to.id][tid], p)
					load[from.id]--
					load[to.id]++
					moved = true
					break
				}
			}
			if moved {
				break
			}
		}
	}
	for _, set := range out {
		for t, ps := range set {
			if len(ps) == 0 {
				delete(set, t)
				continue
			}
			slices.Sort(ps)
		}
	}
	return out
}

func membersByLoadQuadratic(ms []*cmember, load map[string]int, desc bool) []*cmember {
	s := slices.Clone(ms)
	slices.SortStableFunc(s, func(a, b *cmember) int {
		if d := load[a.id] - load[b.id]; d != 0 {
			if desc {
				return -d
			}
			return d
		}
		return strings.Compare(a.id, b.id)
	})
	return s
}

// TestAssignUniformSameAsBefore: on random groups (members subscribing to
// random subsets of random topics, a previous target from an earlier
// round with some members gone and others new), assignUniform gives the
// same target as the quadratic version it replaced.
func TestAssignUniformSameAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var topics []topicMeta
		for i := range 1 + rng.IntN(4) {
			var id [16]byte
			id[0] = byte(i + 1)
			topics = append(topics, topicMeta{name: fmt.Sprintf("t%d", i), id: id, partitions: int32(rng.IntN(12))})
		}
		members := func(n, from int) []*cmember {
			var ms []*cmember
			for i := range n {
				m := &cmember{id: fmt.Sprintf("m%03d", from+i)}
				for _, tm := range topics {
					if rng.IntN(3) > 0 {
						m.names = append(m.names, tm.name)
					}
				}
				ms = append(ms, m)
			}
			return ms
		}
		first := members(rng.IntN(8), 0)
		prev := assignUniformQuadratic(assignInput{members: first, topics: topics})
		// Some leave, some join.
		var now []*cmember
		for _, m := range first {
			if rng.IntN(4) > 0 {
				now = append(now, m)
			}
		}
		now = append(now, members(rng.IntN(6), 100)...)
		slices.SortFunc(now, func(a, b *cmember) int { return strings.Compare(a.id, b.id) })
		in := assignInput{members: now, topics: topics, previous: prev}
		if got, want := assignUniform(in), assignUniformQuadratic(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
}

// BenchmarkAssignUniformJoin: the target computed when one member joins a
// group of n subscribed to one topic of p partitions (what each join of a
// member flood costs the coordinator), by assignUniform and, side by side,
// the quadratic version it replaced.
func BenchmarkAssignUniformJoin(b *testing.B) {
	for _, impl := range []struct {
		name string
		f    func(assignInput) map[string]partitionSet
	}{{"now", assignUniform}, {"before", assignUniformQuadratic}} {
		for _, n := range []int{100, 1000} {
			for _, p := range []int32{1, 100} {
				b.Run(fmt.Sprintf("impl=%s/members=%d/partitions=%d", impl.name, n, p), func(b *testing.B) {
					topics := []topicMeta{{name: "t", id: [16]byte{1}, partitions: p}}
					var ms []*cmember
					for i := range n {
						ms = append(ms, &cmember{id: fmt.Sprintf("m%05d", i), names: []string{"t"}})
					}
					prev := assignUniform(assignInput{members: ms[:n-1], topics: topics})
					in := assignInput{members: ms, topics: topics, previous: prev}
					for b.Loop() {
						impl.f(in)
					}
				})
			}
		}
	}
}

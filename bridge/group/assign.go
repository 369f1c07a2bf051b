package group

import (
	"slices"
	"strings"
)

// The server-side assignors of KIP-848 (docs/design/consumer-groups.md §3).

// assignInput is what an assignor sees: the members (sorted by id), the
// topics any of them subscribes to (sorted by name), and the previous
// target assignment, which uniform keeps where it can.
type assignInput struct {
	members  []*cmember
	topics   []topicMeta
	previous map[string]partitionSet
}

// assignUniform spreads every subscribed partition over the members that
// subscribe to its topic, so that member loads differ by at most one where
// subscriptions allow, moving as few partitions as it can from the previous
// target (Kafka's UniformAssignor: sticky and balanced).
func assignUniform(in assignInput) map[string]partitionSet {
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
	eligible := func(m *cmember, t topicMeta) bool { return m.subscribes(t.name) }
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
		for _, from := range membersByLoad(in.members, load, true) {
			for _, to := range membersByLoad(in.members, load, false) {
				if load[to.id]+1 >= load[from.id] {
					break
				}
				if tid, p, ok := movable(out[from.id], to, topicOf); ok {
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

// membersByLoad returns the members sorted by load, most loaded first when
// desc, ties by id.
func membersByLoad(ms []*cmember, load map[string]int, desc bool) []*cmember {
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

// movable finds a partition in set that member to subscribes to: the
// highest partition of the first such topic by id, for determinism.
func movable(set partitionSet, to *cmember, topicOf map[[16]byte]topicMeta) ([16]byte, int32, bool) {
	ids := make([][16]byte, 0, len(set))
	for t, ps := range set {
		if len(ps) > 0 {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, compareIDs)
	for _, t := range ids {
		if to.subscribes(topicOf[t].name) {
			ps := set[t]
			return t, slices.Max(ps), true
		}
	}
	return [16]byte{}, 0, false
}

// assignRange gives each member a contiguous range of each topic it
// subscribes to, the first members one partition more when the count does
// not divide (Kafka's RangeAssignor, server side): members subscribed to
// the same co-partitioned topics get the same partition numbers of each.
func assignRange(in assignInput) map[string]partitionSet {
	out := make(map[string]partitionSet, len(in.members))
	for _, m := range in.members {
		out[m.id] = partitionSet{}
	}
	for _, t := range in.topics {
		var subs []*cmember
		for _, m := range in.members {
			if m.subscribes(t.name) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		// Static members keep their place across restarts: order by
		// instance id where there is one, as Kafka orders range members.
		slices.SortStableFunc(subs, func(a, b *cmember) int { return strings.Compare(rangeKey(a), rangeKey(b)) })
		per, extra := int(t.partitions)/len(subs), int(t.partitions)%len(subs)
		next := int32(0)
		for i, m := range subs {
			n := per
			if i < extra {
				n++
			}
			for range n {
				out[m.id][t.id] = append(out[m.id][t.id], next)
				next++
			}
		}
	}
	return out
}

func rangeKey(m *cmember) string {
	if m.hasInstance {
		return m.instanceID
	}
	return m.id
}

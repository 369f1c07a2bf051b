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
	// regexTopics is what each regex subscription resolved to (the topics
	// it matches that its resolver may describe); nil: match the regex.
	regexTopics map[string]map[string]bool
}

// subscribes reports whether m subscribes to topic name: by name, or by a
// regex whose resolution holds it.
func (in *assignInput) subscribes(m *cmember, name string) bool {
	if _, ok := slices.BinarySearch(m.names, name); ok {
		return true
	}
	if m.re == nil {
		return false
	}
	if in.regexTopics == nil {
		return m.re.MatchString(name)
	}
	return in.regexTopics[m.regex][name]
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
	eligible := func(m *cmember, t topicMeta) bool { return in.subscribes(m, t.name) }
	// 1. Keep each partition with its previous owner if still eligible.
	// The owners are indexed once, so a partition's lookup does not scan
	// every member's previous set (P·n for P partitions, n members).
	type slot struct {
		topic [16]byte
		p     int32
	}
	owners := make(map[slot]string)
	for id, set := range in.previous {
		if byID[id] == nil {
			continue
		}
		for tid, ps := range set {
			for _, p := range ps {
				owners[slot{tid, p}] = id
			}
		}
	}
	var free []part
	for _, t := range in.topics {
		for p := int32(0); p < t.partitions; p++ {
			owner := owners[slot{t.id, p}]
			if owner == "" || !eligible(byID[owner], t) {
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
	// A pass sorts the members once each way (the loads change only by the
	// move that ends it) and stops at the first member that cannot give a
	// partition away for being within one of the least loaded, so a pass
	// costs n log n, not a sort per giver (docs/design/consumer-groups.md §3).
	for moved := len(in.members) > 0; moved; {
		moved = false
		asc, desc := byLoad(in.members, load, false), byLoad(in.members, load, true)
		least := asc[0].load
		for _, from := range desc {
			if from.load <= least+1 {
				break // nor can any less loaded member give one
			}
			for _, to := range asc {
				if to.load+1 >= from.load {
					break
				}
				if tid, p, ok := movable(&in, out[from.m.id], to.m, topicOf); ok {
					set := out[from.m.id]
					set[tid] = slices.DeleteFunc(set[tid], func(x int32) bool { return x == p })
					out[to.m.id][tid] = append(out[to.m.id][tid], p)
					load[from.m.id]--
					load[to.m.id]++
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

// loaded is a member and its load when sorted (byLoad).
type loaded struct {
	m    *cmember
	load int
}

// byLoad returns the members with their loads, sorted by load (most loaded
// first when desc), ties by id.
func byLoad(ms []*cmember, load map[string]int, desc bool) []loaded {
	s := make([]loaded, len(ms))
	for i, m := range ms {
		s[i] = loaded{m, load[m.id]}
	}
	slices.SortFunc(s, func(a, b loaded) int {
		if d := a.load - b.load; d != 0 {
			if desc {
				return -d
			}
			return d
		}
		return strings.Compare(a.m.id, b.m.id)
	})
	return s
}

// movable finds a partition in set that member to subscribes to: the
// highest partition of the first such topic by id, for determinism.
func movable(in *assignInput, set partitionSet, to *cmember, topicOf map[[16]byte]topicMeta) ([16]byte, int32, bool) {
	ids := make([][16]byte, 0, len(set))
	for t, ps := range set {
		if len(ps) > 0 {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, compareIDs)
	for _, t := range ids {
		if in.subscribes(to, topicOf[t].name) {
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
			if in.subscribes(m, t.name) {
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

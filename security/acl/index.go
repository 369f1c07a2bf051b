package acl

// The snapshot's persistent structures. A snapshot is never changed once
// stored, so a change copies what it alters; these split the state so that
// what a change alters is small. Copying every ACL on every change made a
// flood of CreateAcls quadratic: 5,000 ACLs added ten a request cost 650 ms
// and 200 MB of garbage (security/acl BenchmarkAddFlood), garbage the
// runtime then collected on everyone's time.

import (
	"iter"
	"maps"
	"slices"
	"sort"

	"github.com/zeebo/xxh3"
)

// nameShards is the number of shards of a nameIndex.
const nameShards = 256

// nameIndex maps resource names to their ACL entries, in nameShards maps
// chosen by a hash of the name: a change copies the shard array and the
// shards it touches, not every name. The zero value is empty.
type nameIndex struct {
	shards *[nameShards]map[string][]entry
}

func shardOf(name string) int { return int(xxh3.HashString(name) % nameShards) }

// get returns name's entries (allocation-free).
func (x nameIndex) get(name string) ([]entry, bool) {
	if x.shards == nil {
		return nil, false
	}
	es, ok := x.shards[shardOf(name)][name]
	return es, ok
}

// all yields every name and its entries, in no order.
func (x nameIndex) all() iter.Seq2[string, []entry] {
	return func(yield func(string, []entry) bool) {
		if x.shards == nil {
			return
		}
		for _, m := range x.shards {
			for k, es := range m {
				if !yield(k, es) {
					return
				}
			}
		}
	}
}

// indexWriter adds one change's entries to a nameIndex, copying its shard
// array and each shard it touches once, so the index it was made from is
// left as it was.
type indexWriter struct {
	x      *nameIndex
	own    bool // x.shards is this change's copy
	copied [nameShards]bool
}

func (w *indexWriter) add(name string, e entry) {
	if !w.own {
		var shards [nameShards]map[string][]entry
		if w.x.shards != nil {
			shards = *w.x.shards
		}
		w.x.shards, w.own = &shards, true
	}
	s := shardOf(name)
	if !w.copied[s] {
		w.copied[s] = true
		if m := w.x.shards[s]; m != nil {
			w.x.shards[s] = maps.Clone(m)
		} else {
			w.x.shards[s] = map[string][]entry{}
		}
	}
	m := w.x.shards[s]
	// Clip: a list shared with the old index is appended to as a copy.
	m[name] = append(slices.Clip(m[name]), e)
}

// chunkMax bounds a chunk of a bindingList.
const chunkMax = 64

// bindingList is the sorted (compareBindings), distinct bindings, in
// chunks of at most chunkMax: an insert copies the chunk list and the
// chunks it changes. The zero value is empty.
type bindingList struct {
	chunks [][]Binding // none empty; each chunk's last sorts before the next's first
	n      int
}

// listOf makes a bindingList of sorted, distinct bindings.
func listOf(bs []Binding) bindingList {
	l := bindingList{n: len(bs)}
	for len(bs) > 0 {
		k := min(len(bs), chunkMax)
		l.chunks = append(l.chunks, bs[:k:k])
		bs = bs[k:]
	}
	return l
}

// chunkFor is the index of the chunk b belongs in: the first whose last
// binding sorts at or after b, or the last chunk when b sorts after all.
func (l bindingList) chunkFor(b Binding) int {
	ci := sort.Search(len(l.chunks), func(k int) bool {
		c := l.chunks[k]
		return compareBindings(c[len(c)-1], b) >= 0
	})
	return min(ci, len(l.chunks)-1)
}

// has reports whether b is in l.
func (l bindingList) has(b Binding) bool {
	if l.n == 0 {
		return false
	}
	_, ok := slices.BinarySearchFunc(l.chunks[l.chunkFor(b)], b, compareBindings)
	return ok
}

// all yields the bindings in order.
func (l bindingList) all() iter.Seq[*Binding] {
	return func(yield func(*Binding) bool) {
		for _, c := range l.chunks {
			for i := range c {
				if !yield(&c[i]) {
					return
				}
			}
		}
	}
}

// slice returns the bindings as one slice.
func (l bindingList) slice() []Binding {
	out := make([]Binding, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return out
}

// with returns l and bs (sorted, distinct, none in l): the chunks bs go
// into are copied with them (split when past chunkMax), the others
// shared.
func (l bindingList) with(bs []Binding) bindingList {
	if len(bs) == 0 {
		return l
	}
	if l.n == 0 {
		return listOf(slices.Clone(bs))
	}
	out := bindingList{chunks: make([][]Binding, 0, len(l.chunks)+len(bs)/chunkMax+2), n: l.n + len(bs)}
	for ci, c := range l.chunks {
		k := 0 // bs[:k] go into this chunk
		if ci == len(l.chunks)-1 {
			k = len(bs)
		} else {
			last := c[len(c)-1]
			for k < len(bs) && compareBindings(bs[k], last) < 0 {
				k++
			}
		}
		if k == 0 {
			out.chunks = append(out.chunks, c)
			continue
		}
		merged := make([]Binding, 0, len(c)+k)
		i, j := 0, 0
		for i < len(c) || j < k {
			if j == k || i < len(c) && compareBindings(c[i], bs[j]) < 0 {
				merged = append(merged, c[i])
				i++
			} else {
				merged = append(merged, bs[j])
				j++
			}
		}
		for len(merged) > chunkMax {
			half := chunkMax / 2
			out.chunks = append(out.chunks, merged[:half:half])
			merged = merged[half:]
		}
		out.chunks = append(out.chunks, merged)
		bs = bs[k:]
	}
	return out
}

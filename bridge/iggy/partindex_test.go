package iggy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPartIndexMatchesAMap: random puts, removes (of the partition indexed
// and of one replaced since) and looks, on topics of partitions near 0 and
// past maxSliced, against a map by name and partition; the topics left
// empty are gone, the remembered topic is never a removed one, and no slice
// ends in an empty place or holds much more memory than it uses.
func TestPartIndexMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newPartIndex()
	want := map[partKey]*partCache{}
	var stale []*partCache // partitions once indexed, since replaced or removed
	names := []string{"a", "bb", "topic-c"}
	partition := func(name string) int32 {
		switch {
		case name == "a": // two partitions: the topic is often left empty
			return rng.Int32N(2)
		case rng.IntN(4) == 0:
			return maxSliced + rng.Int32N(8) - 2 // both sides of the bound
		case rng.IntN(8) == 0:
			return -1 - rng.Int32N(2) // not a partition, but no panic
		}
		return rng.Int32N(20)
	}
	for step := range 20000 {
		// The looked-up name never aliases a key's, as a request frame's does not.
		name := strings.Clone(names[rng.IntN(len(names))])
		k := partKey{name, partition(name)}
		switch rng.IntN(4) {
		case 0: // put, in place of what was there
			if old := want[k]; old != nil {
				x.remove(old)
				stale = append(stale, old)
			}
			p := &partCache{key: partKey{strings.Clone(name), k.partition}}
			x.put(p)
			want[k] = p
		case 1: // remove the partition indexed
			if p := want[k]; p != nil {
				x.remove(p)
				delete(want, k)
				stale = append(stale, p)
			}
		case 2: // remove one no longer indexed: nothing changes
			if len(stale) > 0 {
				x.remove(stale[rng.IntN(len(stale))])
			}
		}
		if got := x.get(k.topic, k.partition); got != want[k] {
			t.Fatalf("step %d: get(%q, %d) = %p, want %p", step, k.topic, k.partition, got, want[k])
		}
		if x.last != nil && x.topics[x.last.name] != x.last {
			t.Fatalf("step %d: the remembered topic %q is not indexed", step, x.last.name)
		}
	}
	if x.len() != len(want) {
		t.Fatalf("len %d, want %d", x.len(), len(want))
	}
	for name, tp := range x.topics {
		if n := len(tp.parts); n > 0 && tp.parts[n-1] == nil || cap(tp.parts) > 2*n+16 {
			t.Fatalf("%q: %d places (capacity %d), the last empty", name, n, cap(tp.parts))
		}
	}
	seen := map[partKey]bool{}
	x.each(func(p *partCache) {
		if want[p.key] != p || seen[p.key] {
			t.Fatalf("each: %v not indexed, or twice", p.key)
		}
		seen[p.key] = true
	})
	for _, name := range names {
		x.eachOf(name, x.remove)
		for k := range want {
			if k.topic == name {
				delete(want, k)
			}
		}
		if _, ok := x.topics[name]; ok || x.len() != len(want) {
			t.Fatalf("after removing every partition of %q: indexed %v, len %d, want %d", name, ok, x.len(), len(want))
		}
	}
}

package acl

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIncrementalIndexMatchesBuild: after any sequence of Adds (indexed
// incrementally, snapshot.with) and Removes (rebuilt), the index holds
// exactly what build makes of the same bindings, and a snapshot a reader
// loaded before a change is unchanged by it.
func TestIncrementalIndexMatchesBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := New(Config{})
	names := []string{"a", "ab", "abc", "t", "topic-1", "topic-2", "*"}
	users := []string{"User:alice", "User:bob", "User:*"}
	random := func() Binding {
		b := lit(ResourceType(2+rng.IntN(2)), names[rng.IntN(len(names))], users[rng.IntN(len(users))], "*",
			[]Operation{OpRead, OpWrite, OpAll}[rng.IntN(3)], []Permission{PermAllow, PermDeny}[rng.IntN(2)])
		if b.ResourceName != "*" && rng.IntN(3) == 0 {
			b.PatternType = PatternPrefixed
		}
		return b
	}
	for step := range 2000 {
		before := a.snap.Load()
		frozen := indexOf(before)
		if rng.IntN(5) == 0 {
			b := random()
			a.Remove(Filter{ResourceType: b.ResourceType, PatternType: b.PatternType, ResourceName: b.ResourceName, HasName: true,
				Operation: OpAny, Permission: PermAny})
		} else {
			var bs []Binding
			for range 1 + rng.IntN(3) {
				bs = append(bs, random())
			}
			a.Add(bs...)
		}
		got := a.snap.Load()
		if want := indexOf(build(got.bindings.slice())); indexOf(got) != want {
			t.Fatalf("step %d: index\n%s\nwant (build)\n%s", step, indexOf(got), want)
		}
		if indexOf(before) != frozen {
			t.Fatalf("step %d: a change altered the snapshot readers held", step)
		}
	}
}

// indexOf renders a snapshot's index canonically: per type, the literal
// and prefixed names with their entries sorted, and the prefix lengths.
func indexOf(s *snapshot) string {
	out := ""
	for rt := range s.types {
		ti := &s.types[rt]
		for _, kind := range []struct {
			name string
			m    map[string][]entry
		}{{"literal", maps.Collect(ti.literal.all())}, {"prefixed", maps.Collect(ti.prefixed.all())}} {
			for _, k := range slices.Sorted(maps.Keys(kind.m)) {
				es := slices.Clone(kind.m[k])
				slices.SortFunc(es, func(x, y entry) int {
					return cmp.Or(cmp.Compare(x.principal.Type+":"+x.principal.Name, y.principal.Type+":"+y.principal.Name),
						cmp.Compare(x.host, y.host), cmp.Compare(x.op, y.op), cmp.Compare(x.perm, y.perm))
				})
				out += fmt.Sprintf("%d %s %q %v\n", rt, kind.name, k, es)
			}
		}
		out += fmt.Sprintf("%d lens %v\n", rt, ti.prefixLens)
	}
	return out
}

// TestBindingListWith: inserting into a bindingList keeps every binding
// in order, chunks within chunkMax, and the list it was made from intact.
func TestBindingListWith(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var l bindingList
	var want []Binding
	for step := range 300 {
		var add []Binding
		for range 1 + rng.IntN(40) {
			b := lit(ResourceTopic, fmt.Sprintf("t-%04d", rng.IntN(5000)), "User:a", "*", OpRead, PermAllow)
			if !l.has(b) && !slices.ContainsFunc(add, func(x Binding) bool { return compareBindings(x, b) == 0 }) {
				add = append(add, b)
			}
		}
		slices.SortFunc(add, compareBindings)
		before, frozen := l, l.slice()
		l = l.with(add)
		want = append(want, add...)
		slices.SortFunc(want, compareBindings)
		if got := l.slice(); !slices.Equal(got, want) || l.n != len(want) {
			t.Fatalf("step %d: %d bindings, want %d in order", step, len(got), len(want))
		}
		for _, c := range l.chunks {
			if len(c) == 0 || len(c) > chunkMax {
				t.Fatalf("step %d: a chunk of %d", step, len(c))
			}
		}
		if !slices.Equal(before.slice(), frozen) {
			t.Fatalf("step %d: inserting changed the list it was made from", step)
		}
		for _, b := range want[:min(len(want), 20)] {
			if !l.has(b) {
				t.Fatalf("step %d: has(%v) false", step, b)
			}
		}
	}
}

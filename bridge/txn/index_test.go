package txn

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
)

func TestIndexUnused(t *testing.T) {
	x := NewIndex()
	if x.Active() {
		t.Fatal("a new index is active")
	}
	if got := x.LastStable("t", 0, 42); got != 42 {
		t.Fatalf("LastStable = %d", got)
	}
	if got := x.AbortedIn(nil, "t", 0, 0, math.MaxInt64); got != nil {
		t.Fatalf("AbortedIn = %v", got)
	}
	if x.Prune("t", 0, 100) {
		t.Fatal("Prune of nothing dropped something")
	}
}

func TestIndexLastStable(t *testing.T) {
	x := NewIndex()
	x.Open("t", 0, 1, 10)
	x.Open("t", 0, 2, 5)
	x.Open("t", 0, 3, 20)
	x.Open("t", 1, 4, 7)
	if !x.Active() {
		t.Fatal("not active")
	}
	steps := []struct {
		close  int64 // producer whose transaction ends first (0: none)
		commit bool
		p0, p1 int64 // last stable of partitions 0 and 1 at high 100
	}{
		{0, false, 5, 7},
		{1, true, 5, 7},   // not the earliest: nothing moves
		{2, false, 20, 7}, // the earliest
		{3, true, 100, 7},
	}
	for i, s := range steps {
		if s.close != 0 {
			x.Close("t", 0, s.close, 50+int64(i), s.commit)
		}
		if got := x.LastStable("t", 0, 100); got != s.p0 {
			t.Fatalf("step %d: partition 0 last stable %d, want %d", i, got, s.p0)
		}
		if got := x.LastStable("t", 1, 100); got != s.p1 {
			t.Fatalf("step %d: partition 1 last stable %d, want %d", i, got, s.p1)
		}
	}
	// Below the high watermark only; other partitions untouched.
	if got := x.LastStable("t", 1, 3); got != 3 {
		t.Fatalf("high 3: %d", got)
	}
	if got := x.LastStable("u", 0, 9); got != 9 {
		t.Fatalf("other topic: %d", got)
	}
	// A second Open keeps the earlier first offset.
	x.Open("t", 2, 9, 30)
	x.Open("t", 2, 9, 40)
	x.Open("t", 2, 9, 25)
	if got := x.LastStable("t", 2, 100); got != 25 {
		t.Fatalf("reopened: %d, want 25", got)
	}
}

func TestIndexCloseAndAbortedIn(t *testing.T) {
	x := NewIndex()
	x.Open("t", 0, 1, 10)
	if x.Close("t", 0, 1, 15, true) {
		t.Fatal("a commit reported an abort to persist")
	}
	if got := x.AbortedList("t", 0); len(got) != 0 {
		t.Fatalf("commit added %v", got)
	}
	x.Open("t", 0, 2, 20)
	if !x.Close("t", 0, 2, 30, false) {
		t.Fatal("an abort was not reported")
	}
	// The same marker closed again (written again after a crash).
	if x.Close("t", 0, 2, 30, false) {
		t.Fatal("a duplicate marker was added again")
	}
	// An abort of a transaction not open there (its marker written
	// already, a completion retried) adds nothing.
	if x.Close("t", 0, 3, 40, false) {
		t.Fatal("abort of a transaction not open was added")
	}
	// The same transaction (producer and first offset) reopened after a
	// restart and closed by a new marker is not added twice.
	x.Open("t", 0, 2, 20)
	if x.Close("t", 0, 2, 35, false) {
		t.Fatal("an abort whose marker was written again after a restart was added again")
	}
	x.Open("t", 0, 4, 41)
	x.Close("t", 0, 4, 60, false)
	want := []Aborted{{2, 20, 30}, {4, 41, 60}}
	if got := x.AbortedList("t", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedList = %v, want %v", got, want)
	}
	cases := []struct {
		from, to int64
		want     []Aborted
	}{
		{0, 20, nil}, // first 20 is not below 20
		{0, 21, want[:1]},
		{30, 31, want[:1]}, // marker at from counts
		{31, 41, nil},      // first 41 is not below 41
		{31, 42, want[1:]},
		{31, math.MaxInt64, want[1:]},
		{41, 42, want[1:]},
		{50, 55, want[1:]}, // inside the second
		{61, 1000, nil},
		{0, math.MaxInt64, want},
	}
	for _, c := range cases {
		got := x.AbortedIn(nil, "t", 0, c.from, c.to)
		if len(got) != len(c.want) || len(got) > 0 && !reflect.DeepEqual(got, c.want) {
			t.Errorf("AbortedIn [%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	// It appends to dst.
	dst := []Aborted{{9, 9, 9}}
	if got := x.AbortedIn(dst, "t", 0, 41, 42); len(got) != 2 || got[0] != dst[0] || got[1] != want[1] {
		t.Fatalf("append: %v", got)
	}
	// AbortedList is a copy.
	l := x.AbortedList("t", 0)
	l[0].ProducerID = 77
	if x.AbortedList("t", 0)[0].ProducerID != 2 {
		t.Fatal("AbortedList aliases the index")
	}
	if x.AbortedList("nope", 0) != nil {
		t.Fatal("AbortedList of an unknown partition")
	}
}

func TestIndexPruneSetDrop(t *testing.T) {
	x := NewIndex()
	list := []Aborted{{1, 0, 10}, {2, 5, 20}, {3, 21, 30}}
	x.SetAborted("t", 0, list)
	list[0].ProducerID = 99 // SetAborted copies
	if got := x.AbortedList("t", 0); got[0].ProducerID != 1 || len(got) != 3 {
		t.Fatalf("SetAborted: %v", got)
	}
	if x.Prune("t", 0, 10) {
		t.Fatal("Prune below every marker dropped one")
	}
	if !x.Prune("t", 0, 11) {
		t.Fatal("Prune past the first marker dropped none")
	}
	if got := x.AbortedList("t", 0); !reflect.DeepEqual(got, []Aborted{{2, 5, 20}, {3, 21, 30}}) {
		t.Fatalf("after Prune: %v", got)
	}
	if x.Prune("u", 0, 100) {
		t.Fatal("Prune of an unknown partition")
	}
	x.SetAborted("t", 3, []Aborted{{4, 1, 2}})
	x.Open("t", 5, 6, 7) // open only: no aborted index to drop
	x.SetAborted("other", 0, []Aborted{{5, 1, 2}})
	had := x.DropTopic("t")
	if len(had) != 2 || !(had[0] == 0 && had[1] == 3 || had[0] == 3 && had[1] == 0) {
		t.Fatalf("DropTopic = %v, want [0 3]", had)
	}
	if x.AbortedList("t", 0) != nil || x.LastStable("t", 5, 100) != 100 {
		t.Fatal("DropTopic left state")
	}
	if len(x.AbortedList("other", 0)) != 1 {
		t.Fatal("DropTopic dropped another topic")
	}
	if x.DropTopic("t") != nil {
		t.Fatal("second DropTopic")
	}
}

func TestAbortedKey(t *testing.T) {
	for _, c := range []struct {
		topic string
		p     int32
	}{{"t", 0}, {"a.b-c_d", 2147483647}, {"x", 12}} {
		k := abortedKey(c.topic, c.p)
		topic, p, ok := parseAbortedKey(k)
		if !ok || topic != c.topic || p != c.p {
			t.Fatalf("%q: %q %d %v", k, topic, p, ok)
		}
	}
	for _, k := range []string{"", "/0", "t", "t/", "t/-1", "t/x", "t/2147483648", "t/1.0"} {
		if _, _, ok := parseAbortedKey(k); ok {
			t.Errorf("parseAbortedKey(%q) ok", k)
		}
	}
}

func TestEncodeAborted(t *testing.T) {
	for _, list := range [][]Aborted{nil, {{1, 2, 3}}, {{math.MaxInt64, -1, math.MinInt64}, {0, 0, 0}}} {
		b := encodeAborted(list)
		got, err := decodeAborted(b)
		if err != nil || len(got) != len(list) || len(list) > 0 && !reflect.DeepEqual(got, list) {
			t.Fatalf("%v: %v %v", list, got, err)
		}
	}
	good := encodeAborted([]Aborted{{1, 2, 3}, {4, 5, 6}})
	for n := range len(good) {
		if _, err := decodeAborted(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for name, b := range map[string][]byte{
		"trailing":  append(bytes.Clone(good), 0),
		"version-2": append([]byte{2}, good[1:]...),
		"count+1":   append(append([]byte{1}, 3, 0, 0, 0), good[5:]...),
		"huge":      {1, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, err := decodeAborted(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecodeAborted(f *testing.F) {
	f.Add(encodeAborted(nil))
	f.Add(encodeAborted([]Aborted{{1, 2, 3}, {4, 5, 6}}))
	f.Add([]byte{1, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := decodeAborted(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v", err)
			}
			return
		}
		if again := encodeAborted(list); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, again)
		}
	})
}

// TestIndexConcurrent runs Open/Close/LastStable/AbortedIn/Prune from many
// goroutines (run with -race); each producer's transaction is its own,
// so at the end every partition's last stable offset is its high.
func TestIndexConcurrent(t *testing.T) {
	x := NewIndex()
	const workers, rounds = 16, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := int64(w + 1)
			for r := range rounds {
				topic := fmt.Sprintf("t%d", r%3)
				p := int32(r % 4)
				first := int64(r * 10)
				x.Open(topic, p, pid, first)
				if lso := x.LastStable(topic, p, math.MaxInt64); lso > first {
					t.Errorf("last stable %d above an open transaction's first %d", lso, first)
					return
				}
				_ = x.AbortedIn(nil, topic, p, 0, math.MaxInt64)
				x.Close(topic, p, pid, first+5, r%2 == 0)
				if r%50 == 0 {
					x.Prune(topic, p, first)
					_ = x.AbortedList(topic, p)
				}
			}
		}()
	}
	wg.Wait()
	for r := range 3 {
		for p := range int32(4) {
			if lso := x.LastStable(fmt.Sprintf("t%d", r), p, 1<<40); lso != 1<<40 {
				t.Fatalf("t%d/%d: last stable %d with nothing open", r, p, lso)
			}
		}
	}
}

func TestIndexTouchedOpenFirstWithAborted(t *testing.T) {
	x := NewIndex()
	if f, ok := x.Touched("t", 0); ok || f != math.MaxInt64 {
		t.Fatalf("unused index: %d %v", f, ok)
	}
	if _, ok := x.OpenFirst("t", 0, 1); ok {
		t.Fatal("OpenFirst of an unused index")
	}
	x.Open("t", 0, 1, 30)
	x.Open("t", 0, 2, 10)
	if f, ok := x.Touched("t", 0); !ok || f != 10 {
		t.Fatalf("two open: %d %v", f, ok)
	}
	if f, ok := x.OpenFirst("t", 0, 1); !ok || f != 30 {
		t.Fatalf("OpenFirst 1: %d %v", f, ok)
	}
	if _, ok := x.OpenFirst("t", 0, 3); ok {
		t.Fatal("OpenFirst of a producer with nothing open")
	}
	if _, ok := x.Touched("t", 1); ok {
		t.Fatal("an untouched partition")
	}
	x.Close("t", 0, 1, 40, true)
	x.Close("t", 0, 2, 41, false)
	// Only an aborted transaction left: touched, nothing open.
	if f, ok := x.Touched("t", 0); !ok || f != math.MaxInt64 {
		t.Fatalf("aborted only: %d %v", f, ok)
	}
	// A partition whose transactions all committed has nothing.
	x.Open("u", 0, 5, 1)
	x.Close("u", 0, 5, 2, true)
	if _, ok := x.Touched("u", 0); ok {
		t.Fatal("a partition with only commits is touched")
	}
	x.SetAborted("v", 3, []Aborted{{1, 1, 2}})
	got := map[partKey]bool{}
	x.WithAborted(func(topic string, p int32) {
		got[partKey{topic, p}] = true
		x.Prune(topic, p, math.MaxInt64) // fn may use the index
	})
	if len(got) != 2 || !got[partKey{"t", 0}] || !got[partKey{"v", 3}] {
		t.Fatalf("WithAborted %v", got)
	}
}

// BenchmarkAbortedIn: the aborted transactions of one read of a partition
// that holds n of them (each 10 records and its marker, producers taking
// turns), as a read_committed Fetch asks twice per partition read
// (before and after it): at the tail, where none is met, and from the
// middle, where a 1 MiB read meets a few.
func BenchmarkAbortedIn(b *testing.B) {
	for _, n := range []int{10, 1000, 100_000} {
		x := NewIndex()
		for i := range n {
			pid := int64(i % 7)
			first := int64(i) * 11
			x.Open("t", 0, pid, first)
			x.Close("t", 0, pid, first+10, false)
		}
		end := int64(n) * 11
		for _, at := range []struct {
			name string
			from int64
		}{{"tail", end}, {"middle", end / 2}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, at.name), func(b *testing.B) {
				var dst []Aborted
				b.ReportAllocs()
				for b.Loop() {
					dst = x.AbortedIn(dst[:0], "t", 0, at.from, at.from+1<<20/1024)
				}
			})
		}
	}
}

// TestAbortedInMatchesScan: AbortedIn's bounded search finds exactly what a
// scan of every aborted transaction finds, for random reads of a partition
// whose transactions interleave, span up to thousands of offsets, close
// out of marker order, are pruned and are loaded unsorted.
func TestAbortedInMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		x := NewIndex()
		var all []Aborted
		next := int64(rng.IntN(100))
		open := map[int64]int64{}
		type closing struct {
			pid, marker int64
			commit      bool
		}
		var pending []closing
		for range 50 + rng.IntN(300) {
			pid := int64(rng.IntN(6))
			if first, ok := open[pid]; ok && rng.IntN(3) == 0 {
				// Closed: a marker past its records (and maybe past
				// another's, closed first: out of order).
				marker := next + int64(rng.IntN(3))
				next = marker + 1
				commit := rng.IntN(2) == 0
				if !commit {
					all = append(all, Aborted{ProducerID: pid, First: first, Last: marker})
				}
				delete(open, pid)
				// Closed now or after later markers were closed.
				pending = append(pending, closing{pid, marker, commit})
				for len(pending) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(pending))
					c := pending[i]
					x.Close("t", 0, c.pid, c.marker, c.commit)
					pending = slices.Delete(pending, i, i+1)
				}
				continue
			}
			if slices.ContainsFunc(pending, func(c closing) bool { return c.pid == pid }) {
				continue // its marker is not written yet: no new transaction
			}
			if _, ok := open[pid]; !ok {
				open[pid] = next
				x.Open("t", 0, pid, next)
			}
			next += 1 + int64(rng.IntN(1+rng.IntN(2000)))
		}
		for _, c := range pending {
			x.Close("t", 0, c.pid, c.marker, c.commit)
		}
		if round%3 == 0 {
			// Pruned below a log start.
			start := int64(rng.IntN(int(next + 1)))
			x.Prune("t", 0, start)
			all = slices.DeleteFunc(all, func(a Aborted) bool { return a.Last < start })
		}
		if round%5 == 0 {
			// Loaded from a stored list in any order.
			shuffled := slices.Clone(all)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			x = NewIndex()
			x.SetAborted("t", 0, shuffled)
		}
		for range 200 {
			from := int64(rng.IntN(int(next + 10)))
			to := from + int64(rng.IntN(3000))
			var want []Aborted
			for _, a := range all {
				if a.Last >= from && a.First < to {
					want = append(want, a)
				}
			}
			got := x.AbortedIn(nil, "t", 0, from, to)
			key := func(a, b Aborted) int {
				return cmp.Or(cmp.Compare(a.Last, b.Last), cmp.Compare(a.ProducerID, b.ProducerID))
			}
			slices.SortFunc(want, key)
			slices.SortFunc(got, key)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, [%d, %d): got %v, want %v", round, from, to, got, want)
			}
		}
	}
}

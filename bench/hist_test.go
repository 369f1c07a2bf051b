package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestHistogramBuckets checks that every value lands in a bucket whose
// range holds it and whose width is within 1/64 of the value.
func TestHistogramBuckets(t *testing.T) {
	prevHigh := int64(-1)
	for i := 0; i < histBuckets-1; i++ {
		hi := bucketHigh(i)
		if hi <= prevHigh {
			t.Fatalf("bucket %d: upper edge %d not above bucket %d's %d", i, hi, i-1, prevHigh)
		}
		if bucketOf(hi) != i || bucketOf(prevHigh+1) != i {
			t.Fatalf("bucket %d = [%d, %d] but bucketOf gives %d and %d", i, prevHigh+1, hi, bucketOf(prevHigh+1), bucketOf(hi))
		}
		if lo := prevHigh + 1; lo >= 2*histSub && float64(hi-lo+1) > float64(lo)/histSub {
			t.Fatalf("bucket %d = [%d, %d] wider than 1/%d of its start", i, lo, hi, histSub)
		}
		prevHigh = hi
	}
	if got := bucketOf(1 << 50); got != histBuckets-1 {
		t.Fatalf("huge value in bucket %d, want the last", got)
	}
	if got := bucketOf(-5); got != 0 {
		t.Fatalf("negative value in bucket %d, want 0", got)
	}
}

// TestHistogramQuantiles compares quantiles with an exact sort.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]int64, 100000)
	for i := range vals {
		// Log-uniform from 1 µs to 1 s, like latencies.
		v := int64(1000 * float64(uint64(1)<<r.IntN(20)) * (1 + r.Float64()))
		vals[i] = v
		h.Record(time.Duration(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := int64(h.Quantile(q))
		if got < exact || float64(got-exact) > float64(exact)/histSub+1 {
			t.Errorf("q%.3f = %d, exact %d: want within +1/%d", q, got, exact, histSub)
		}
	}
	if h.Count() != uint64(len(vals)) || int64(h.Max()) != vals[len(vals)-1] {
		t.Fatalf("count %d max %v", h.Count(), h.Max())
	}

	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 2*h.Count() || m.Quantile(0.5) != h.Quantile(0.5) || m.Max() != h.Max() {
		t.Fatalf("merge: count %d p50 %v max %v", m.Count(), m.Quantile(0.5), m.Max())
	}
	var empty Histogram
	if empty.Quantile(0.99) != 0 {
		t.Fatal("empty histogram has a quantile")
	}
}

func TestHistogramRecordAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234567) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(1000)
		for pb.Next() {
			h.Record(d)
			d += 7919
		}
	})
}

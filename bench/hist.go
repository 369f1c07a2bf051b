package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram records durations in log-linear buckets: exact below 128 ns,
// then 64 buckets per power of two, so a percentile is reported within 1/64
// (1.6 %) of the true value, from 1 ns to about 18 minutes. Record is safe
// for concurrent use and does not allocate (the producer callbacks of every
// partition record into one Histogram); read it once recording has stopped.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	total  atomic.Uint64
	max    atomic.Int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	histMaxExp  = 40               // 2^40 ns ≈ 18 min; longer values are clamped
	histBuckets = (histMaxExp - histSubBits + 1) * histSub
)

// bucketOf maps a non-negative duration in ns to its bucket.
func bucketOf(ns int64) int {
	if ns < 0 {
		ns = 0
	}
	if ns < 2*histSub {
		return int(ns)
	}
	exp := bits.Len64(uint64(ns)) - 1 // ns in [2^exp, 2^(exp+1))
	if exp >= histMaxExp {
		return histBuckets - 1
	}
	// The top histSubBits bits below the leading one pick the sub-bucket.
	sub := int(uint64(ns)>>(exp-histSubBits)) & (histSub - 1)
	return (exp-histSubBits)*histSub + histSub + sub
}

// bucketHigh returns the largest value in bucket i (the value a percentile
// falling in it reports, so percentiles never understate).
func bucketHigh(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	exp := (i-histSub)/histSub + histSubBits
	sub := int64((i - histSub) % histSub)
	lo := int64(1)<<exp + sub<<(exp-histSubBits)
	return lo + int64(1)<<(exp-histSubBits) - 1
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	ns := int64(d)
	h.counts[bucketOf(ns)].Add(1)
	h.total.Add(1)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			return
		}
	}
}

// Count returns the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Max returns the largest recorded duration.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Merge adds o's counts into h. Neither may be recording at the time.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	if m := o.max.Load(); m > h.max.Load() {
		h.max.Store(m)
	}
}

// Quantile returns the duration at or below which fraction q (0–1] of the
// recorded durations fall, rounded up to its bucket's upper edge and capped
// at the maximum; 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			v := bucketHigh(i)
			if m := h.max.Load(); v > m {
				v = m
			}
			return time.Duration(v)
		}
	}
	return h.Max()
}

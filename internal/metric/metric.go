// Package metric holds the few metric primitives kiggy exposes in the
// Prometheus text format (version 0.0.4): a latency histogram made of
// atomics, and the writers for its exposition. Counters and gauges are plain
// sync/atomic values in their owners' structs, indexed by fixed enums, so the
// hot path costs one atomic add and never a map or label lookup; only a
// scrape formats text.
package metric

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds of every latency histogram.
var LatencyBuckets = [...]time.Duration{
	100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 5 * time.Second, 30 * time.Second,
}

// Histogram counts durations into LatencyBuckets (non-cumulative; Write sums
// them) with two atomic adds per observation. The zero value is ready.
type Histogram struct {
	buckets [len(LatencyBuckets) + 1]atomic.Uint64
	sumNs   atomic.Uint64
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < len(LatencyBuckets) && d > LatencyBuckets[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// Write writes h's series for metric name (in seconds) with the label pair
// label="value" (label "" = none), unless h is empty.
func (h *Histogram) Write(w io.Writer, name, label, value string) {
	var counts [len(LatencyBuckets) + 1]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	if total == 0 {
		return
	}
	lp := ""
	if label != "" {
		lp = fmt.Sprintf("%s=%q,", label, value)
	}
	var run uint64
	for i, b := range LatencyBuckets {
		run += counts[i]
		fmt.Fprintf(w, "%s_bucket{%sle=\"%g\"} %d\n", name, lp, b.Seconds(), run)
	}
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"} %d\n", name, lp, total)
	sel := ""
	if label != "" {
		sel = fmt.Sprintf("{%s=%q}", label, value)
	}
	fmt.Fprintf(w, "%s_sum%s %g\n", name, sel, float64(h.sumNs.Load())/1e9)
	fmt.Fprintf(w, "%s_count%s %d\n", name, sel, total)
}

// Header writes a metric family's HELP and TYPE lines.
func Header(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// Single writes a family of one unlabelled sample.
func Single(w io.Writer, name, typ, help string, v any) {
	Header(w, name, typ, help)
	fmt.Fprintf(w, "%s %v\n", name, v)
}

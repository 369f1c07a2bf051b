package bench

import "testing"

// TestParseIggyBench reads iggy-bench's summary lines (core/bench report
// prints.rs format), colour codes included.
func TestParseIggyBench(t *testing.T) {
	out := "noise\n\x1b[32mProducers Results: Total throughput: 439.45 MB/s, 450000 messages/s, average throughput per producer: 109.86 MB/s, p50 latency: 1.20 ms, p90 latency: 2.00 ms, p95 latency: 2.50 ms, p99 latency: 4.25 ms, p999 latency: 9.00 ms, p9999 latency: 12.00 ms, average latency: 1.30 ms, median latency: 1.20 ms, min: 0.50 ms, max: 20.00 ms, std dev: 0.40 ms, total time: 7.10 s\x1b[0m\n" +
		"Consumers Results: Total throughput: 375.00 MB/s, 384000 messages/s, average throughput per consumer: 93.75 MB/s, p50 latency: 1.00 ms, p90 latency: 1.50 ms, p95 latency: 2.00 ms, p99 latency: 3.00 ms, p999 latency: 5.00 ms, p9999 latency: 6.00 ms, average latency: 1.10 ms, median latency: 1.00 ms, min: 0.40 ms, max: 8.00 ms, std dev: 0.30 ms, total time: 8.30 s\n"
	res := parseIggyBench(out)
	if p := res["Producers"]; p.msgsPerSec != 450000 || p.mbPerSec != 439.45 || p.p99Ms != 4.25 {
		t.Fatalf("producers: %+v", p)
	}
	if c := res["Consumers"]; c.msgsPerSec != 384000 || c.p99Ms != 3 {
		t.Fatalf("consumers: %+v", c)
	}
	if len(parseIggyBench("nothing here")) != 0 {
		t.Fatal("parsed a line that is not a summary")
	}
}

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestPrepareIggyBenchStreams: the topics iggy-bench is to reuse are made
// at the asked durability on every stream (the client does not read a
// segment size back; docs/BENCHMARKS.md's run checked it on the real
// server), and a fresh
// preparation empties a topic that holds messages from an earlier run
// (iggy-bench would otherwise poll those first); a preparation that is not
// fresh leaves them.
func TestPrepareIggyBenchStreams(t *testing.T) {
	srv := iggytest.New(iggytest.Config{})
	a, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := a.String()
	topic := store.TopicConfig{SegmentBytes: 1 << 20}
	if err := prepareIggyBenchStreams(ctx, addr, "iggy", "iggy", 2, "written", topic, true); err != nil {
		t.Fatal(err)
	}
	open := func(i int) *iggy.Client {
		c, err := iggy.Open(ctx, iggy.Config{Addr: addr, Username: "iggy", Password: "iggy",
			Stream: fmt.Sprintf("bench-stream-%d", i), PoolSize: 1, PingInterval: -1, ReadCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c1 := open(1)
	for i := 1; i <= 2; i++ {
		info, err := open(i).Topic(ctx, "topic-1")
		if err != nil {
			t.Fatalf("bench-stream-%d: %v", i, err)
		}
		if info.Partitions != 1 || info.Config.Durability != store.DurabilityWritten {
			t.Errorf("bench-stream-%d/topic-1: %d partitions, %v; want 1, written", i, info.Partitions, info.Config.Durability)
		}
	}
	var b message.Batch
	b.Reset(uint64(time.Now().UnixMicro()))
	b.Begin(b.Origin)
	b.Buf = append(b.Buf, "an earlier run's message"...)
	b.End()
	if _, err := c1.Append(ctx, "topic-1", 0, &b); err != nil {
		t.Fatal(err)
	}
	high := func() int64 {
		wm, err := c1.Watermarks(ctx, "topic-1", 0)
		if err != nil {
			t.Fatal(err)
		}
		return wm.High
	}
	if err := prepareIggyBenchStreams(ctx, addr, "iggy", "iggy", 2, "written", topic, false); err != nil {
		t.Fatal(err)
	}
	if h := high(); h != 1 {
		t.Fatalf("high watermark %d after a preparation that is not fresh, want 1 (kept)", h)
	}
	if err := prepareIggyBenchStreams(ctx, addr, "iggy", "iggy", 2, "written", topic, true); err != nil {
		t.Fatal(err)
	}
	if h := high(); h != 0 {
		t.Fatalf("high watermark %d after a fresh preparation, want 0", h)
	}
}

// TestIggyDataDir: a fresh iggy-server data directory is made under
// Config.IggyDir, and releasing it copies every server.log below it (a
// single node's, a cluster node's one level deeper) into the work directory
// and removes it.
func TestIggyDataDir(t *testing.T) {
	r := &runner{cfg: Config{IggyDir: t.TempDir()}, work: t.TempDir()}
	dir, release, err := r.iggyDataDir("node")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != r.cfg.IggyDir {
		t.Fatalf("data directory %s is not under %s", dir, r.cfg.IggyDir)
	}
	for _, p := range []string{"node-1/server.log", "cluster-1/node-2/server.log"} {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory after release: %v, want removed", err)
	}
	got := map[string]bool{}
	for _, n := range []string{"node-0.log", "node-1.log"} {
		b, err := os.ReadFile(filepath.Join(r.work, n))
		if err != nil {
			t.Fatal(err)
		}
		got[string(b)] = true
	}
	if !got["node-1/server.log"] || !got["cluster-1/node-2/server.log"] {
		t.Errorf("copied logs %v, want both server.log files", got)
	}
}

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

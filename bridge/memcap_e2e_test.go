package bridge_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestMemlogTotalCapOverKafka: producing to many partitions past the embedded
// log's total cap keeps the memory it holds under the cap; the partition
// written first lost its data first, and a Fetch below its new log start is
// OFFSET_OUT_OF_RANGE (so auto.offset.reset applies), as with retention.
func TestMemlogTotalCapOverKafka(t *testing.T) {
	const total = 256 << 10
	gw := kiggytest.Start(t, kiggytest.Options{Embedded: true, Memlog: memlog.Config{TotalBytes: total, ChunkSize: 16 << 10}})
	gw.CreateTopic(t, "first", 1)
	gw.CreateTopic(t, "many", 32)
	rc := dialRaw(t, gw.Addr)
	value := strings.Repeat("m", 2000)
	held := regexp.MustCompile(`(?m)^kiggy_memlog_bytes (\d+)$`)
	produce := func(topic string, p int32, i int) {
		t.Helper()
		req := produceRequestTo(topic, batchOf(batch.NoCompression, fmt.Sprintf("%d-%s", i, value)))
		req.Topics[0].Partitions[0].Partition = p
		if codes := produceCodes(rc, req); codes[0] != 0 {
			t.Fatalf("produce %s/%d: code %d", topic, p, codes[0])
		}
		m := held.FindStringSubmatch(gw.Metrics())
		if m == nil {
			t.Fatalf("no kiggy_memlog_bytes in the metrics")
		}
		if n, _ := strconv.Atoi(m[1]); n > total {
			t.Fatalf("%d bytes held, cap %d", n, total)
		}
	}
	for i := range 20 {
		produce("first", 0, i)
	}
	for i := range 32 * 8 {
		produce("many", int32(i%32), i)
	}

	fr := fetchOf("first", 0, 0)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = fr.Version
	rc.recv(rc.send(fr), resp)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 1 { // OFFSET_OUT_OF_RANGE
		t.Fatalf("Fetch at offset 0 of the oldest partition: code %d, log start %d, high %d", p.ErrorCode, p.LogStartOffset, p.HighWatermark)
	}
	if p.LogStartOffset == 0 || p.HighWatermark != 20 {
		t.Fatalf("oldest partition: log start %d, high %d", p.LogStartOffset, p.HighWatermark)
	}
	if !strings.Contains(gw.Metrics(), `kiggy_memlog_dropped_bytes_total{limit="total"} `) ||
		strings.Contains(gw.Metrics(), `kiggy_memlog_dropped_bytes_total{limit="total"} 0`+"\n") {
		t.Fatalf("no drops by the total cap counted:\n%s", gw.Metrics())
	}
}

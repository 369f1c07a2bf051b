package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// logDirsCommand is kafka-log-dirs (Java Admin client 4.x,
// Admin.describeLogDirs: DescribeLogDirs).
const logDirsCommand = "org.apache.kafka.tools.LogDirsCommand"

// TestLogDirsCommand drives kafka-log-dirs --describe and franz-go's
// DescribeAllLogDirs over a topic of three partitions holding 100, 10 and
// 0 records of 1 KiB: each partition is listed with a size that holds its
// records (the empty one 0, the fuller one more), and a partition or topic
// that does not exist is left out. Against Kafka 4.4 the same assertions
// hold (KIGGY_INTEROP_TARGET=kafka).
func TestLogDirsCommand(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	topic := topicName(t)
	topicCommandCreate(t, tg, topic, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // Kafka keeps batches as sent
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("x"), 1024)
	for p, n := range map[int32]int{0: 100, 1: 10} {
		for range n {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: value}, nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkSizes := func(how string, sizes map[int32]int64) {
		t.Helper()
		if len(sizes) != 3 || sizes[0] < 100*1024 || sizes[1] < 10*1024 || sizes[1] >= sizes[0] || sizes[2] != 0 {
			t.Errorf("%s: partition sizes %v; want 3 partitions, ≥ 100 KiB, ≥ 10 KiB and less, and 0", how, sizes)
		}
	}

	// kafka-log-dirs prints one JSON line after its two lines of progress.
	r := adminTool(t, tg, logDirsCommand, "--describe", "--topic-list", topic+",missing-"+topic)
	if r.code != 0 {
		t.Fatalf("kafka-log-dirs --describe: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var out struct {
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
					OffsetLag int64  `json:"offsetLag"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatalf("kafka-log-dirs --describe: the last line is not its JSON (%v):\n%s", err, r)
	}
	if len(out.Brokers) != 1 || out.Brokers[0].Broker != nodeID || len(out.Brokers[0].LogDirs) != 1 {
		t.Fatalf("kafka-log-dirs --describe: want broker %d with one log dir:\n%s", nodeID, r.stdout)
	}
	dir := out.Brokers[0].LogDirs[0]
	if dir.Error != nil || dir.LogDir == "" {
		t.Errorf("kafka-log-dirs --describe: log dir %q, error %v", dir.LogDir, dir.Error)
	}
	sizes := map[int32]int64{}
	for _, p := range dir.Partitions {
		var n int32
		if _, err := fmt.Sscanf(strings.TrimPrefix(p.Partition, topic+"-"), "%d", &n); err != nil || !strings.HasPrefix(p.Partition, topic+"-") {
			t.Errorf("kafka-log-dirs --describe lists %q, not a partition of %s", p.Partition, topic)
			continue
		}
		if p.OffsetLag != 0 || p.IsFuture {
			t.Errorf("kafka-log-dirs --describe: %s has offset lag %d, future %v", p.Partition, p.OffsetLag, p.IsFuture)
		}
		sizes[n] = p.Size
	}
	checkSizes("kafka-log-dirs --describe", sizes)
	t.Logf("kafka-log-dirs: log dir %s, sizes %v", dir.LogDir, sizes)

	// franz-go: every topic (a null list), then one partition by name.
	all, err := kadm.NewClient(cl).DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes = map[int32]int64{}
	all.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Errorf("DescribeAllLogDirs: %s: %v", d.Dir, d.Err)
		}
		for _, p := range d.Topics[topic] {
			sizes[p.Partition] = p.Size
		}
	})
	checkSizes("DescribeAllLogDirs", sizes)
	// A partition and a topic that do not exist are left out (straight to
	// the broker: franz-go's admin client refuses them itself).
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: topic, Partitions: []int32{1, 7}}, {Topic: "missing-" + topic, Partitions: []int32{0}}}
	kr, err := cl.Broker(nodeID).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kr.(*kmsg.DescribeLogDirsResponse)
	var got []string
	for _, d := range resp.Dirs {
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				got = append(got, fmt.Sprintf("%s-%d", tp.Topic, p.Partition))
			}
		}
	}
	if len(got) != 1 || got[0] != topic+"-1" {
		t.Errorf("DescribeLogDirs of %s partitions 1 and 7: %v, want %s-1 alone", topic, got, topic)
	}
}

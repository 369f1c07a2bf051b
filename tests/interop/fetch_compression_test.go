package interop

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Compressed Fetch (docs/design/record-mapping.md §3.5): a topic with a
// compression.type is served in that codec, whatever the producer used.

// fetchCodecIDs are the codecs a topic's compression.type can name, with
// their attribute bits (docs/design/kafka-protocol.md §5).
var fetchCodecIDs = []struct {
	name string
	id   int16
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// createCompressedTopic creates topic with compression.type set through
// CreateTopics; on kiggy, when it does not accept the config, straight in
// its backend (TopicConfig.Compression).
func createCompressedTopic(t testing.TB, tg target, topic string, partitions int32, compression string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, map[string]*string{"compression.type": kadm.StringPtr(compression)}, topic)
	if err == nil {
		err = resp.Err
	}
	if k, ok := tg.(*kiggyTarget); ok && err != nil {
		t.Logf("kiggy: CreateTopics with compression.type=%s: %v; creating the topic in the backend", compression, err)
		_, err = k.g.Log.CreateTopic(context.Background(), topic, partitions, store.TopicConfig{Compression: compression})
	}
	if err != nil {
		t.Fatalf("%s: creating topic %s: %v", tg.Name(), topic, err)
	}
	waitTopicReady(t, tg, topic, partitions)
}

// checkWireCodec fetches every partition of topic from offset 0 with a raw
// Fetch v12 and checks that each batch carries codec id in its attributes.
func checkWireCodec(t testing.TB, tg target, topic string, partitions int32, id int16) {
	t.Helper()
	kc, err := kafkawire.Dial(tg.Addr(), "wire-check", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, 0, 1, 16<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, 0, 4<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := kc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("%s/%d: error %d, %d bytes", topic, p.Partition, p.ErrorCode, len(p.RecordBatches))
		}
		for rb := p.RecordBatches; len(rb) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(rb); err != nil {
				t.Fatalf("%s/%d: %v", topic, p.Partition, err)
			}
			if b.Attributes&7 != id {
				t.Fatalf("%s/%d: batch at %d has codec %d, want %d", topic, p.Partition, b.FirstOffset, b.Attributes&7, id)
			}
			rb = rb[12+int(b.Length):]
		}
	}
}

// franzReadAll consumes every partition of topic from the start with
// franz-go (no group) until it holds bp's records, and compares.
func franzReadAll(t testing.TB, tg target, topic string, partitions int32, bp byPartition) {
	t.Helper()
	want := 0
	for _, recs := range bp {
		want += len(recs)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(256<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := map[int32][]kiggytest.Record{}
	for n := 0; n < want; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("franz-go fetch: %v (have %d of %d)", err, n, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := fromKgoSent(r)
			rec.Offset = r.Offset
			got[r.Partition] = append(got[r.Partition], rec)
			n++
		})
	}
	for p := range partitions {
		compare(t, tg, fmt.Sprintf("franz-go %s/%d", topic, p), got[p], bp[p], nil)
	}
}

// TestFetchCompressedTopic: a topic with compression.type gzip, snappy, lz4
// or zstd, produced to uncompressed by franz-go (the franzRecords shapes and
// a 600 KiB record per partition), is served in its codec (a raw Fetch shows
// the attribute bits) and read back record for record by franz-go, kcat
// (librdkafka) and the Java console consumer.
func TestFetchCompressedTopic(t *testing.T) {
	tg := newTarget(t)
	kcat := testtools.Kcat(t)
	testtools.JavaClasspath(t)
	for _, c := range fetchCodecIDs {
		t.Run(c.name, func(t *testing.T) {
			const partitions = 2
			topic := topicName(t)
			createCompressedTopic(t, tg, topic, partitions, c.name)
			rs := franzRecords(200, "codec-"+c.name, time.Now().Truncate(time.Millisecond))
			for i := range partitions {
				rs = append(rs, &kgo.Record{Key: []byte("large"), Value: pattern(600<<10, int(i)), Timestamp: time.Now().Truncate(time.Millisecond)})
			}
			for i, r := range rs {
				r.Topic, r.Partition = topic, int32(i)%partitions
			}
			bp := byPartition{}
			produceFranzTo(t, tg.Addr(), bp, rs, kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(2<<20))

			checkWireCodec(t, tg, topic, partitions, c.id)
			franzReadAll(t, tg, topic, partitions, bp)
			kcatReadAll(t, tg, kcat, topic, partitions, bp, nil)
			got := consoleConsume(t, tg, topic, "console-"+topic, "--max-messages", strconv.Itoa(len(rs)), "--timeout-ms", "60000")
			for p := range int32(partitions) {
				compare(t, tg, fmt.Sprintf("console consumer %s/%d", topic, p), got[p], bp[p], nil)
			}
		})
	}
}

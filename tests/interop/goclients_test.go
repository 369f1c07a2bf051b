package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// byPartition groups records sent (in send order) by the partition each
// landed on, checking that the offset the producer was told matches the
// record's position in its partition.
type byPartition map[int32][]kiggytest.Record

func (bp byPartition) add(t testing.TB, partition int32, offset int64, rec kiggytest.Record) {
	t.Helper()
	if want := int64(len(bp[partition])); offset != want {
		t.Errorf("producer was told offset %d for the record at position %d of partition %d", offset, want, partition)
	}
	bp[partition] = append(bp[partition], rec)
}

// checkAll reads back every partition of topic and compares it with bp.
func (bp byPartition) checkAll(t testing.TB, tg target, topic string, partitions int32, ts *tsWindow) {
	t.Helper()
	for p := range partitions {
		check(t, tg, topic, p, bp[p], ts)
	}
}

// pattern returns n bytes of a repeating, index-dependent pattern.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i*7+seed)%26)
	}
	return b
}

// franzRecords builds n records covering the shapes the mapping treats
// differently: null, empty and 300-byte keys; null (tombstone) and empty
// values; null, empty and 300-byte header values; several headers out of
// name order; timestamps that are not monotonic.
func franzRecords(n int, tag string, base time.Time) []*kgo.Record {
	rs := make([]*kgo.Record, n)
	for i := range rs {
		r := &kgo.Record{Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		if i%13 == 0 {
			r.Timestamp = base.Add(-5 * time.Second)
		}
		switch i % 7 {
		case 0: // null key
		case 1:
			r.Key = []byte{}
		case 2:
			r.Key = pattern(300, i)
		default:
			r.Key = fmt.Appendf(nil, "key-%04d", i)
		}
		switch i % 11 {
		case 0: // null value
		case 1:
			r.Value = []byte{}
		default:
			r.Value = fmt.Appendf(nil, "%s-%04d%s", tag, i, filler)
		}
		switch i % 5 {
		case 0: // no headers
		case 1:
			r.Headers = []kgo.RecordHeader{{Key: "zeta", Value: []byte("1")}, {Key: "alpha", Value: fmt.Appendf(nil, "%d", i)}, {Key: "mid", Value: []byte("m")}}
		case 2:
			r.Headers = []kgo.RecordHeader{{Key: "nullh"}, {Key: "b", Value: []byte("x")}}
		case 3:
			r.Headers = []kgo.RecordHeader{{Key: "emptyh", Value: []byte{}}}
		case 4:
			r.Headers = []kgo.RecordHeader{{Key: "long", Value: pattern(300, i)}, {Key: "a", Value: []byte("y")}}
		}
		rs[i] = r
	}
	return rs
}

func fromKgoSent(r *kgo.Record) kiggytest.Record {
	rec := kiggytest.Record{Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, kiggytest.Header{Key: h.Key, Value: h.Value})
	}
	return rec
}

// produceFranz produces rs with a franz-go client and returns them grouped
// by the partition each landed on.
func produceFranz(t testing.TB, addr string, rs []*kgo.Record, opts ...kgo.Opt) byPartition {
	t.Helper()
	bp := byPartition{}
	produceFranzTo(t, addr, bp, rs, opts...)
	return bp
}

// produceFranzTo produces rs with a franz-go client and appends them to bp,
// which holds what the topic's partitions had before.
func produceFranzTo(t testing.TB, addr string, bp byPartition, rs []*kgo.Record, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ProduceRequestTimeout(20 * time.Second),
		kgo.RecordDeliveryTimeout(45 * time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := make([]error, len(rs))
	for i, r := range rs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { errs[i] = err })
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("franz-go flush: %v", err)
	}
	for i, r := range rs {
		if errs[i] != nil {
			t.Fatalf("franz-go: record %d: %v", i, errs[i])
		}
		bp.add(t, r.Partition, r.Offset, fromKgoSent(r))
	}
}

// TestFranzGo produces with franz-go (idempotent by default) to a
// 16-partition topic with each compression codec, without idempotence, and
// a 1 MiB value.
func TestFranzGo(t *testing.T) {
	tg := newTarget(t)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"none", []kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}},
		{"gzip", []kgo.Opt{kgo.ProducerBatchCompression(kgo.GzipCompression())}},
		{"snappy", []kgo.Opt{kgo.ProducerBatchCompression(kgo.SnappyCompression())}},
		{"lz4", []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
		{"zstd", []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
		{"not-idempotent", []kgo.Opt{kgo.DisableIdempotentWrite()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 16
			topic := topicName(t)
			tg.CreateTopic(t, topic, partitions)
			rs := franzRecords(800, tc.name, time.Now().Truncate(time.Millisecond))
			for _, r := range rs {
				r.Topic = topic
			}
			bp := produceFranz(t, tg.Addr(), rs, tc.opts...)
			if len(bp) < partitions/2 {
				t.Errorf("records landed on only %d of %d partitions", len(bp), partitions)
			}
			bp.checkAll(t, tg, topic, partitions, nil)
		})
	}

	t.Run("1MiB-value", func(t *testing.T) {
		topic := topicName(t)
		tg.CreateTopic(t, topic, 1)
		now := time.Now().Truncate(time.Millisecond)
		rs := []*kgo.Record{
			{Topic: topic, Key: []byte("big"), Value: pattern(1<<20, 1), Timestamp: now,
				Headers: []kgo.RecordHeader{{Key: "size", Value: []byte("1MiB")}}},
			{Topic: topic, Key: []byte("after"), Value: []byte("small"), Timestamp: now.Add(time.Millisecond)},
		}
		bp := produceFranz(t, tg.Addr(), rs,
			kgo.ProducerBatchMaxBytes(4<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
		bp.checkAll(t, tg, topic, 1, nil)
	})
}

// TestSarama produces with a sarama SyncProducer to a 4-partition topic,
// hashing keys, with each codec (sarama frames snappy the xerial way).
func TestSarama(t *testing.T) {
	tg := newTarget(t)
	for _, tc := range []struct {
		name  string
		codec sarama.CompressionCodec
	}{
		{"none", sarama.CompressionNone},
		{"gzip", sarama.CompressionGZIP},
		{"snappy", sarama.CompressionSnappy},
		{"lz4", sarama.CompressionLZ4},
		{"zstd", sarama.CompressionZSTD},
	} {
		t.Run(tc.name, func(t *testing.T) { saramaProduce(t, tg, tc.codec) })
	}
}

// saramaProduce is TestSarama with one codec.
func saramaProduce(t *testing.T, tg target, codec sarama.CompressionCodec) {
	const partitions = 4
	topic := topicName(t)
	tg.CreateTopic(t, topic, partitions)

	cfg := sarama.NewConfig()
	cfg.ClientID = "kiggy-interop"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codec
	cfg.Producer.Timeout = 20 * time.Second
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Net.ReadTimeout = 30 * time.Second
	cfg.Net.WriteTimeout = 30 * time.Second
	p, err := sarama.NewSyncProducer([]string{tg.Addr()}, cfg)
	if err != nil {
		t.Fatalf("sarama: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			p.Close()
		}
	}()

	base := time.Now().Truncate(time.Millisecond)
	bp := byPartition{}
	for i := range 200 {
		msg := &sarama.ProducerMessage{
			Topic:     topic,
			Value:     sarama.ByteEncoder(fmt.Appendf(nil, "sarama-%04d%s", i, filler)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers: []sarama.RecordHeader{
				{Key: []byte("zeta"), Value: []byte("z")},
				{Key: []byte("alpha"), Value: fmt.Appendf(nil, "%d", i)},
			},
		}
		want := kiggytest.Record{
			Timestamp: msg.Timestamp.UnixMilli(),
			Value:     []byte(msg.Value.(sarama.ByteEncoder)),
			Headers:   []kiggytest.Header{{Key: "zeta", Value: []byte("z")}, {Key: "alpha", Value: fmt.Appendf(nil, "%d", i)}},
		}
		if i%4 != 0 { // every fourth key is null
			want.Key = fmt.Appendf(nil, "key-%d", i%37)
			msg.Key = sarama.ByteEncoder(want.Key)
		}
		partition, offset, err := p.SendMessage(msg)
		if err != nil {
			t.Fatalf("sarama: message %d: %v", i, err)
		}
		bp.add(t, partition, offset, want)
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatalf("sarama close: %v", err)
	}
	bp.checkAll(t, tg, topic, partitions, nil)
}

// TestKafkaGoWriter produces with a segmentio/kafka-go Writer, round-robin
// over 3 partitions, uncompressed and with each codec.
func TestKafkaGoWriter(t *testing.T) {
	tg := newTarget(t)
	for _, tc := range []struct {
		name  string
		codec kafkago.Compression
	}{
		{"none", 0},
		{"gzip", kafkago.Gzip},
		{"snappy", kafkago.Snappy},
		{"lz4", kafkago.Lz4},
		{"zstd", kafkago.Zstd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 3
			topic := topicName(t)
			tg.CreateTopic(t, topic, partitions)

			type landed struct {
				partition int32
				offset    int64
			}
			var mu sync.Mutex
			where := map[int]landed{}
			var werr error
			// A Transport of its own: kafka-go's shared DefaultTransport
			// caches cluster metadata (6 s TTL) across writers and would
			// not see this subtest's new topic.
			tr := &kafkago.Transport{DialTimeout: 10 * time.Second, MetadataTTL: time.Second}
			defer tr.CloseIdleConnections()
			w := &kafkago.Writer{
				Transport:    tr,
				Addr:         kafkago.TCP(tg.Addr()),
				Topic:        topic,
				Balancer:     &kafkago.RoundRobin{},
				RequiredAcks: kafkago.RequireAll,
				BatchSize:    40,
				BatchTimeout: 10 * time.Millisecond,
				WriteTimeout: 20 * time.Second,
				ReadTimeout:  20 * time.Second,
				MaxAttempts:  3,
				Compression:  tc.codec,
				Completion: func(msgs []kafkago.Message, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil && werr == nil {
						werr = err
					}
					for _, m := range msgs {
						where[m.WriterData.(int)] = landed{int32(m.Partition), m.Offset}
					}
				},
			}
			base := time.Now().Truncate(time.Millisecond)
			msgs := make([]kafkago.Message, 240)
			for i := range msgs {
				msgs[i] = kafkago.Message{
					Key:        fmt.Appendf(nil, "kg-%d", i),
					Value:      fmt.Appendf(nil, "kafka-go-%04d%s", i, filler),
					Headers:    []kafkago.Header{{Key: "zeta", Value: []byte("1")}, {Key: "alpha", Value: []byte("2")}},
					Time:       base.Add(time.Duration(i) * time.Millisecond),
					WriterData: i,
				}
				if i%6 == 0 {
					msgs[i].Key = nil
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Write in chunks so every partition gets several requests.
			for start := 0; start < len(msgs); start += 60 {
				if err := w.WriteMessages(ctx, msgs[start:start+60]...); err != nil {
					t.Fatalf("kafka-go WriteMessages: %v", err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("kafka-go close: %v", err)
			}
			if werr != nil {
				t.Fatalf("kafka-go completion: %v", werr)
			}
			bp := byPartition{}
			for i, m := range msgs {
				l, ok := where[i]
				if !ok {
					t.Fatalf("kafka-go reported no completion for message %d", i)
				}
				var hs []kiggytest.Header
				for _, h := range m.Headers {
					hs = append(hs, kiggytest.Header{Key: h.Key, Value: h.Value})
				}
				bp.add(t, l.partition, l.offset, kiggytest.Record{Key: m.Key, Value: m.Value, Headers: hs, Timestamp: m.Time.UnixMilli()})
			}
			bp.checkAll(t, tg, topic, partitions, nil)
		})
	}
}

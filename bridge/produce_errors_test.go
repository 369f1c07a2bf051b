package bridge_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/batch"
	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/wire"
)

func buildBatch(t *testing.T, codec batch.Codec, n, valueSize int) []byte {
	var b batch.Builder
	b.Reset(nil, 0, 1_700_000_000_000, codec)
	for i := range n {
		b.Append(int32(i), int64(i), nil, bytes.Repeat([]byte{'v'}, valueSize))
	}
	return b.Finish()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recrc recomputes a batch's CRC-32C after a test edited it.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

func produceReq(version int16, acks int16, parts ...[]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "errs"
	for i, p := range parts {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = int32(i), p
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// Offsets of RecordBatch v2 header fields (docs/design/kafka-protocol.md §4.1).
const (
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offRecordsCount    = 57
)

func TestProduceErrorTable(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{DecodeBudgetBytes: 100_000}})
	gw.CreateTopic(t, "errs", 3)
	good := buildBatch(t, batch.NoCompression, 2, 10)

	twoBatches := append(append([]byte{}, good...), good...)
	moreThanDeclared := append([]byte{}, good...)
	binary.BigEndian.PutUint32(moreThanDeclared[offRecordsCount:], 1) // count 1, 2 records present
	binary.BigEndian.PutUint32(moreThanDeclared[offLastOffsetDelta:], 0)
	recrc(moreThanDeclared)
	transactional := append([]byte{}, good...)
	binary.BigEndian.PutUint16(transactional[offAttributes:], 1<<4)
	recrc(transactional)
	control := append([]byte{}, good...)
	binary.BigEndian.PutUint16(control[offAttributes:], 1<<4|1<<5)
	recrc(control)
	badCRC := append([]byte{}, good...)
	badCRC[len(badCRC)-1] ^= 0xff
	zstd := buildBatch(t, batch.Zstd, 2, 10)
	big := buildBatch(t, batch.Gzip, 1, 150_000)   // over the whole budget alone
	medium := buildBatch(t, batch.Gzip, 1, 60_000) // fits alone, not twice

	rows := []struct {
		name string
		req  *kmsg.ProduceRequest
		want []wire.ErrorCode
	}{
		{"two batches in one entry", produceReq(9, -1, twoBatches), []wire.ErrorCode{wire.InvalidRecord}},
		{"more records than declared", produceReq(9, -1, moreThanDeclared), []wire.ErrorCode{wire.InvalidRecord}},
		{"transactional batch without a transactional id", produceReq(9, -1, transactional), []wire.ErrorCode{wire.TransactionalIDAuthFailed}},
		{"control batch", produceReq(9, -1, control), []wire.ErrorCode{wire.UnsupportedVersion}},
		{"zstd below v7", produceReq(6, -1, zstd), []wire.ErrorCode{wire.UnsupportedCompressionType}},
		{"zstd at v7", produceReq(7, -1, zstd), []wire.ErrorCode{wire.NoError}},
		{"acks 2", produceReq(9, 2, good), []wire.ErrorCode{wire.InvalidRequiredAcks}},
		{"crc damage", produceReq(9, -1, badCRC), []wire.ErrorCode{wire.CorruptMessage}},
		{"null records", produceReq(9, 1, nil), []wire.ErrorCode{wire.InvalidRecord}},
		{"partition out of range", produceReq(9, 1, good, good, good, good), []wire.ErrorCode{wire.NoError, wire.NoError, wire.NoError, wire.UnknownTopicOrPartition}},
		{"over the decode budget alone", produceReq(9, 1, big), []wire.ErrorCode{wire.MessageTooLarge}},
		{"fits alone but not in what remains", produceReq(9, 1, medium, medium), []wire.ErrorCode{wire.NoError, wire.NotLeaderOrFollower}},
		{"independent partitions", produceReq(12, -1, good, badCRC, transactional), []wire.ErrorCode{wire.NoError, wire.CorruptMessage, wire.TransactionalIDAuthFailed}},
	}
	rc := dialRaw(t, gw.Addr)
	for _, row := range rows {
		got := produceCodes(rc, row.req)
		if len(got) != len(row.want) {
			t.Fatalf("%s: %d partitions answered, want %d", row.name, len(got), len(row.want))
		}
		for i := range got {
			if wire.ErrorCode(got[i]) != row.want[i] {
				t.Errorf("%s: partition %d code %d, want %d (%v)", row.name, i, got[i], row.want[i], row.want[i])
			}
		}
		rc.stillUsable()
	}

	// Missing topic: Produce never creates topics.
	req := produceReq(9, 1, good)
	req.Topics[0].Topic = "no-such-topic"
	if got := produceCodes(rc, req); wire.ErrorCode(got[0]) != wire.UnknownTopicOrPartition {
		t.Errorf("missing topic: code %d, want 3", got[0])
	}
	// A transactional batch without a producer id is refused; the
	// connection stays open.
	req = produceReq(9, 1, transactional, transactional)
	txn := "txn"
	req.TransactionID = &txn
	if got := produceCodes(rc, req); wire.ErrorCode(got[0]) != wire.InvalidRecord || wire.ErrorCode(got[1]) != wire.InvalidRecord {
		t.Errorf("transactional batch without a producer id: codes %v, want 87s", got)
	}
	rc.stillUsable()

	// acks=0: no response at all; the next response belongs to the next request.
	rc.send(produceReq(9, 0, good))
	rc.stillUsable()
	if recs := gw.Records(t, "errs", 0); len(recs) == 0 {
		t.Fatal("acks=0 produce stored nothing")
	}

	// Every code answered is counted by API and code, as Kafka's ErrorsPerSec:
	// one per partition that carried it.
	metrics := gw.Metrics()
	for _, want := range []string{
		`kiggy_api_errors_total{api="Produce",code="CORRUPT_MESSAGE"} 2` + "\n",
		`kiggy_api_errors_total{api="Produce",code="INVALID_RECORD"} 5` + "\n",
		`kiggy_api_errors_total{api="Produce",code="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"} 2` + "\n",
		`kiggy_api_errors_total{api="Produce",code="UNSUPPORTED_COMPRESSION_TYPE"} 1` + "\n",
		`kiggy_api_errors_total{api="Produce",code="UNSUPPORTED_VERSION"} 1` + "\n",
		`kiggy_api_errors_total{api="Produce",code="INVALID_REQUIRED_ACKS"} 1` + "\n",
		`kiggy_api_errors_total{api="Produce",code="UNKNOWN_TOPIC_OR_PARTITION"} 2` + "\n",
		`kiggy_api_errors_total{api="Produce",code="MESSAGE_TOO_LARGE"} 1` + "\n",
		`kiggy_api_errors_total{api="Produce",code="NOT_LEADER_OR_FOLLOWER"} 1` + "\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics)
		}
	}

	// Produce v2 is advertised (KAFKA-18659) but refused: the connection closes.
	rc2 := dialRaw(t, gw.Addr)
	rc2.send(produceReq(2, 1, good))
	if !rc2.closed() {
		t.Fatal("Produce v2 did not close the connection")
	}
}

// TestProduceTimeoutIsRequestTimedOut: the backend never confirms (the Iggy
// server drops the send silently, as it does with bad frames): the partition
// answers REQUEST_TIMED_OUT after timeout_ms, never NOT_LEADER (the records
// may be stored), and the connection stays usable.
func TestProduceTimeoutIsRequestTimedOut(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	gw.CreateTopic(t, "errs", 1)
	gw.Iggy.InjectFault(iggytest.Fault{Op: 160, Count: 1, Drop: true})
	rc := dialRaw(t, gw.Addr)
	req := produceReq(9, -1, buildBatch(t, batch.NoCompression, 1, 10))
	req.TimeoutMillis = 500
	start := time.Now()
	if got := produceCodes(rc, req); wire.ErrorCode(got[0]) != wire.RequestTimedOut {
		t.Fatalf("dropped send: code %d, want 7 (REQUEST_TIMED_OUT)", got[0])
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout_ms 500 answered after %v", d)
	}
	rc.stillUsable()
}

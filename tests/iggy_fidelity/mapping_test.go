// Package iggyfidelity checks, with the official Iggy client, what kiggy
// stores in Iggy: records produced by stock Kafka clients through kiggy (on
// the Iggy backend, against iggytest) read back with apache-iggy show the
// payload, kafka.* headers and timestamps docs/design/record-mapping.md promises.
package iggyfidelity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

type stored struct {
	Offset          int64   `json:"offset"`
	Payload         string  `json:"payload"`
	OriginTimestamp uint64  `json:"origin_timestamp"`
	Headers         [][]any `json:"headers"`
	headers         map[string]header
}

type header struct {
	keyKind, valueKind string
	value              []byte
}

// readBack runs readback.py with the official client.
func readBack(t *testing.T, py, addr, topic string, partition int) []stored {
	t.Helper()
	script := filepath.Join(testtools.Root(t), "tests", "iggy_fidelity", "readback.py")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, script, addr, "kafka", topic, strconv.Itoa(partition)).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("readback.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("readback.py: %v", err)
	}
	var msgs []stored
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var m stored
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("readback line %q: %v", sc.Text(), err)
		}
		m.headers = map[string]header{}
		for _, h := range m.Headers {
			key := h[1].(string)
			var val []byte
			switch v := h[3].(type) {
			case string:
				if h[2] == "Raw" {
					val, _ = hex.DecodeString(v)
				} else {
					val = []byte(v)
				}
			case float64:
				val = binary.LittleEndian.AppendUint64(nil, uint64(int64(v)))
			}
			m.headers[key] = header{keyKind: h[0].(string), valueKind: h[2].(string), value: val}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestStoredMappingThroughOfficialClient(t *testing.T) {
	py := testtools.Python(t)
	kcat := testtools.Kcat(t)
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	gw.CreateTopic(t, "mapped", 1)

	ts := time.UnixMilli(1_700_000_000_123)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := []*kgo.Record{
		{Topic: "mapped", Key: []byte("k"), Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}},
		{Topic: "mapped", Key: []byte("k"), Value: nil, Timestamp: ts},      // tombstone
		{Topic: "mapped", Key: []byte{}, Value: []byte("v"), Timestamp: ts}, // empty key: envelope
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kcat, "-P", "-b", gw.Addr, "-t", "mapped", "-K:", "-H", "src=kcat")
	cmd.Stdin = strings.NewReader("kk:from-kcat\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}

	msgs := readBack(t, py, gw.IggyAddr(), "mapped", 0)
	if len(msgs) != 4 {
		t.Fatalf("official client read %d messages, want 4", len(msgs))
	}
	raw := func(m stored, key string) []byte {
		h, ok := m.headers[key]
		if !ok {
			return nil
		}
		if h.keyKind != "String" || h.valueKind != "Raw" {
			t.Errorf("offset %d header %s: kinds %s/%s, want String/Raw", m.Offset, key, h.keyKind, h.valueKind)
		}
		return h.value
	}
	for _, m := range msgs {
		if !bytes.Equal(raw(m, "kafka.v"), []byte{1}) {
			t.Errorf("offset %d: kafka.v = %x, want 01", m.Offset, raw(m, "kafka.v"))
		}
	}
	// Record 0: value → payload, key and header as kafka.* headers, ms → µs.
	m := msgs[0]
	if m.Payload != hex.EncodeToString([]byte("v")) || string(raw(m, "kafka.key")) != "k" || string(raw(m, "kafka.h.trace")) != "abc" ||
		m.OriginTimestamp != uint64(ts.UnixMilli())*1000 {
		t.Errorf("record 0 stored as %+v", m)
	}
	// franz-go is idempotent: the batch's first message carries the
	// producer stamp (docs/MAPPING.md), version 1 and a count of 3 records;
	// the official client reads the block with it.
	if st := raw(m, "kafka.producer"); len(st) != 19 || st[0] != 1 || binary.LittleEndian.Uint32(st[15:]) != 3 {
		t.Errorf("record 0 producer stamp = %x, want 19 bytes, version 1, count 3", st)
	}
	for _, later := range msgs[1:] {
		if _, ok := later.headers["kafka.producer"]; ok {
			t.Errorf("offset %d carries a producer stamp: only a batch's first message does", later.Offset)
		}
	}
	// Record 1: tombstone → placeholder payload 00 and kafka.value=null.
	m = msgs[1]
	if m.Payload != "00" || string(raw(m, "kafka.value")) != "null" {
		t.Errorf("tombstone stored as %+v", m)
	}
	// Record 2: an empty key cannot be a header: the envelope.
	m = msgs[2]
	if !bytes.Equal(raw(m, "kafka.envelope"), []byte{1}) || m.Payload != "0300000000010000007600000000" || len(m.headers) != 2 {
		t.Errorf("empty-key record stored as %+v", m)
	}
	// Record 3 from kcat: key, header, a producer timestamp near now.
	m = msgs[3]
	if string(raw(m, "kafka.key")) != "kk" || string(raw(m, "kafka.h.src")) != "kcat" || m.Payload != hex.EncodeToString([]byte("from-kcat")) {
		t.Errorf("kcat record stored as %+v", m)
	}
	if d := time.Since(time.UnixMicro(int64(m.OriginTimestamp))); d < 0 || d > 5*time.Minute {
		t.Errorf("kcat record origin timestamp %d is not the produce time", m.OriginTimestamp)
	}
}

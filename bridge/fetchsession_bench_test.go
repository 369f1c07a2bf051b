package bridge_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// sessionParts is the partition count of the session benchmark: a consumer
// of 1,000 partitions (docs/BENCHMARKS.md, "Fetch sessions").
const sessionParts = 1000

// sessionMarker is the SessionId a frame is built with, found again to
// patch the real id and epoch in place.
const sessionMarker = 0x7a6b5c4d

// tailFetcher is a consumer of sessionParts partitions at their tail, on
// the given backend, sending Fetch v12 frames with MaxWait 0: the full
// frame (every partition) and the incremental one (none; its session id
// and epoch patched per Fetch).
type tailFetcher struct {
	bc      *benchConn
	full    []byte
	inc     []byte
	idAt    int // offset of SessionId in inc (SessionEpoch follows)
	id      int32
	epoch   int32
	lastLen int // the last response's size
}

func newTailFetcher(tb testing.TB, opts kiggytest.Options) *tailFetcher {
	gw := kiggytest.Start(tb, opts)
	gw.CreateTopic(tb, "tail", sessionParts)
	tf := &tailFetcher{bc: dialBench(tb, gw.Addr)}
	full := fetchRequest(12, "tail", make([]int64, sessionParts), 1<<20, 50<<20)
	full.SessionEpoch = 0 // ask for a session (Java, franz-go)
	tf.full = requestFrame(full, 2)
	inc := fetchRequest(12, "tail", nil, 1<<20, 50<<20)
	inc.Topics = nil
	inc.SessionID, inc.SessionEpoch = sessionMarker, 1
	tf.inc = requestFrame(inc, 3)
	var mark [4]byte
	binary.BigEndian.PutUint32(mark[:], sessionMarker)
	tf.idAt = bytes.Index(tf.inc, mark[:])
	if tf.idAt < 0 {
		tb.Fatal("no session marker in the incremental frame")
	}
	return tf
}

// start sends the full Fetch that opens the session and returns its id.
func (tf *tailFetcher) start(tb testing.TB) int32 {
	body := tf.bc.roundTrip(tb, tf.full)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	if err := resp.ReadFrom(body[5:]); err != nil {
		tb.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != sessionParts {
		tb.Fatalf("full Fetch: code %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
	tf.id, tf.epoch = resp.SessionID, 1
	binary.BigEndian.PutUint32(tf.inc[tf.idAt:], uint32(tf.id))
	return tf.id
}

// incremental sends the next incremental Fetch of the session.
func (tf *tailFetcher) incremental(tb testing.TB) {
	binary.BigEndian.PutUint32(tf.inc[tf.idAt+4:], uint32(tf.epoch))
	body := tf.bc.roundTrip(tb, tf.inc)
	tf.lastLen = len(body)
	// Header: correlation id and tags (5); throttle (4), then the error.
	if code := int16(binary.BigEndian.Uint16(body[9:])); code != 0 {
		tb.Fatalf("incremental Fetch at epoch %d: error %d", tf.epoch, code)
	}
	tf.epoch++
}

// BenchmarkFetchSessions: a consumer of 1,000 partitions at their tail,
// sessionless (every Fetch names and is answered every partition) and in a
// session (each Fetch names none and is answered none), on the embedded
// log and on Iggy as its sole writer (the model; its tail is answered from
// the read cache without a poll): request and response bytes per Fetch,
// wall time and the process's CPU per Fetch (the gateway runs in the test
// process; the client only writes a ready frame and reads the answer).
//
//	go test -run '^$' -bench BenchmarkFetchSessions -benchtime 2000x ./bridge/
func BenchmarkFetchSessions(b *testing.B) {
	backends := []struct {
		name string
		opts kiggytest.Options
	}{
		{"embedded", kiggytest.Options{Embedded: true}},
		{"iggy", kiggytest.Options{Iggy: true, IggyModel: true, IggySoleWriter: true}},
	}
	for _, be := range backends {
		for _, mode := range []string{"off", "on"} {
			b.Run(be.name+"/"+mode, func(b *testing.B) {
				tf := newTailFetcher(b, be.opts)
				benchSessions(b, tf, mode == "on")
			})
		}
	}
}

// benchSessions runs BenchmarkFetchSessions' loop on tf, in a session
// (incremental Fetches) or not (full ones).
func benchSessions(b *testing.B, tf *tailFetcher, session bool) {
	frame := tf.full
	if session {
		tf.start(b)
		frame = tf.inc
	}
	var resp int
	step := func() {
		if session {
			tf.incremental(b)
			resp = tf.lastLen
		} else {
			resp = len(tf.bc.roundTrip(b, frame))
		}
	}
	for range 20 {
		step()
	}
	b.ReportAllocs()
	cpu0, _ := testtools.SelfCPU()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		step()
		n++
	}
	b.StopTimer()
	cpu1, _ := testtools.SelfCPU()
	b.ReportMetric(float64(len(frame)), "req-B/op")
	b.ReportMetric(float64(resp), "resp-B/op")
	b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
}

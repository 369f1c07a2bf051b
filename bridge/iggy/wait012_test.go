package iggy

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggycodec"
)

// The readiness wait (WaitForMessages 107, CancelDeferredRequest 108)
// against Iggy's own codec, iggy_binary_protocol 0.11.1-edge.4 (see
// codec012_test.go).

// waitGoldenFile holds a WaitForMessages request body and reply bodies the
// crate encoded (TestWait012GoldensAreTheCrates regenerates and compares
// them with KIGGY_WRITE_GOLDEN=1 to rewrite), so the codec is checked
// without cargo too.
const waitGoldenFile = "testdata/wait012_golden.json"

type waitGolden struct {
	Request struct {
		Stream     string   `json:"stream"`
		Topic      string   `json:"topic"`
		WaitUS     uint64   `json:"wait_us"`
		TimeoutUS  uint64   `json:"request_timeout_us"`
		Partitions []uint32 `json:"partitions"`
		Offsets    []uint64 `json:"offsets"`
		Body       string   `json:"crate_body"`  // the crate's re-encoding of the decoded request
		Debug      string   `json:"crate_debug"` // the crate's decoded value
	} `json:"request"`
	Replies []struct {
		Seed       uint64   `json:"seed"`
		Body       string   `json:"crate_body"`
		Partitions []uint32 `json:"partitions"`
	} `json:"replies"`
}

// goldenRequest is the golden request's values: edge values of every field
// kiggy sends (the longest wait and timeout, an offset past 2^53, the
// highest partition id).
func goldenRequest() (stream, topic string, waitUS, timeoutUS uint64, parts []uint32, offs []uint64) {
	return "kafka", "orders.v1", proto.MaxDeferredWaitMicros, proto.MaxDeferredTimeoutMicros,
		[]uint32{0, 7, 999, 0xFFFFFFFF}, []uint64{0, 42, 1 << 60, 1<<64 - 1}
}

// waitFrame wraps a WaitForMessages body in a request frame as a bound
// session sends it.
func waitFrame(code uint32, body []byte) []byte {
	f := append(make([]byte, proto.HeaderSize), body...)
	proto.PutRequestHeader(f, len(body), proto.ClientID{Lo: 7}, 3, proto.OpNonReplicated, 5, code)
	return f
}

// TestWait012Golden: kiggy's encoder writes the crate's bytes for the
// golden request, and its decoder reads the crate's replies (no cargo
// needed).
func TestWait012Golden(t *testing.T) {
	var g waitGolden
	raw, err := os.ReadFile(waitGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	r := &g.Request
	body := proto.AppendWaitForMessages(nil, r.Stream, r.Topic, r.WaitUS, r.TimeoutUS, r.Partitions, r.Offsets)
	if hex.EncodeToString(body) != r.Body {
		t.Errorf("kiggy encodes the golden request as\n %x\nthe crate as\n %s", body, r.Body)
	}
	if err := proto.ValidateWait(r.WaitUS, r.TimeoutUS, r.Partitions); err != nil {
		t.Errorf("the golden request fails ValidateWait: %v", err)
	}
	if len(g.Replies) == 0 {
		t.Fatal("no golden replies")
	}
	for _, rep := range g.Replies {
		b, _ := hex.DecodeString(rep.Body)
		w, err := proto.DecodeWaitReply(b)
		if err != nil {
			t.Fatalf("seed %d: %v", rep.Seed, err)
		}
		if w.Len() != len(rep.Partitions) {
			t.Fatalf("seed %d: %d partitions, the crate wrote %v", rep.Seed, w.Len(), rep.Partitions)
		}
		for i, p := range rep.Partitions {
			if w.Partition(i) != p {
				t.Errorf("seed %d partition %d: %d, the crate wrote %d", rep.Seed, i, w.Partition(i), p)
			}
		}
	}
}

// TestWait012GoldensAreTheCrates: the golden file is what the crate
// encodes today.
func TestWait012GoldensAreTheCrates(t *testing.T) {
	o := iggycodec.Start(t)
	var g waitGolden
	r := &g.Request
	r.Stream, r.Topic, r.WaitUS, r.TimeoutUS, r.Partitions, r.Offsets = goldenRequest()
	body := proto.AppendWaitForMessages(nil, r.Stream, r.Topic, r.WaitUS, r.TimeoutUS, r.Partitions, r.Offsets)
	got, err := o.Check(waitFrame(proto.CodeWaitForMessages, body))
	if err != nil {
		t.Fatalf("the crate refuses the golden request: %v", err)
	}
	if got.Code != proto.CodeWaitForMessages {
		t.Fatalf("the crate reads code %d", got.Code)
	}
	r.Body, r.Debug = hex.EncodeToString(got.Body), got.Debug
	for _, want := range []string{"wait_us: 600000000", "request_timeout_us: 630000000", "partition_id: 4294967295", "18446744073709551615", "orders.v1"} {
		if !strings.Contains(got.Debug, want) {
			t.Errorf("the crate's decoded value lacks %q: %s", want, got.Debug)
		}
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8} {
		b, v, err := o.Reply(proto.CodeWaitForMessages, seed)
		if err != nil {
			t.Fatal(err)
		}
		rep := struct {
			Seed       uint64   `json:"seed"`
			Body       string   `json:"crate_body"`
			Partitions []uint32 `json:"partitions"`
		}{Seed: seed, Body: hex.EncodeToString(b), Partitions: []uint32{}}
		for _, p := range v["partitions"].([]any) {
			rep.Partitions = append(rep.Partitions, uint32(num(p)))
		}
		g.Replies = append(g.Replies, rep)
	}
	out, err := json.MarshalIndent(&g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	if os.Getenv("KIGGY_WRITE_GOLDEN") == "1" {
		if err := os.WriteFile(filepath.FromSlash(waitGoldenFile), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(waitGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, out) {
		t.Errorf("%s differs from what the crate encodes (KIGGY_WRITE_GOLDEN=1 rewrites it):\n%s", waitGoldenFile, out)
	}
}

// TestCodec012Waits: every WaitForMessages and CancelDeferredRequest frame
// the client sends passes the server's header checks in Iggy's codec and
// decodes (and validates) with the crate, which re-encodes it byte for
// byte; every wait reply of the model decodes with the crate; replies the
// crate encodes from random values decode to the same partitions in kiggy.
func TestCodec012Waits(t *testing.T) {
	o := iggycodec.Start(t)
	tp := &tap{seen: map[string]bool{}}
	_, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}, Tap: tp.record})
	c := open(t, Config{Addr: addr, WaitSessions: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "codecw", 3, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "codecw", 1, batchOf(1, "v", 1)); err != nil {
		t.Fatal(err)
	}
	if ready, err := c.WaitForAppend(cx, "codecw", []int32{2, 0, 1}, []int64{0, 0, 0}, time.Second); err != nil || !ready {
		t.Fatalf("ready %v err %v", ready, err)
	}
	if ready, err := c.WaitForAppend(cx, "codecw", []int32{0}, []int64{3}, 50*time.Millisecond); err != nil || ready {
		t.Fatalf("ready %v err %v", ready, err)
	}
	if _, err := c.WaitForAppend(cx, "codecw", []int32{0}, []int64{0}, 0); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(cx)
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := c.WaitForAppend(wctx, "codecw", []int32{0, 2}, []int64{0, 0}, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(c.waits.idle) == 2 })
	c.Close()
	tp.mu.Lock()
	frames := tp.frames
	tp.mu.Unlock()
	codes := map[uint32]int{}
	for _, f := range frames {
		if f.code != proto.CodeWaitForMessages && f.code != proto.CodeCancelDeferredRequest {
			continue
		}
		got, err := o.Check(f.frame)
		if err != nil {
			t.Errorf("%d (%d bytes): Iggy's codec refuses kiggy's request: %v", f.code, len(f.frame), err)
			continue
		}
		codes[got.Code]++
		if !bytes.Equal(got.Body, f.frame[proto.HeaderSize:]) {
			t.Errorf("%d: Iggy's codec re-encodes the body differently:\n kiggy %x\n crate %x\n%s", got.Code, f.frame[proto.HeaderSize:], got.Body, got.Debug)
		}
		if got.Code == proto.CodeCancelDeferredRequest && len(f.replies) != 0 {
			t.Errorf("the model answered a CancelDeferredRequest: %x", f.replies)
		}
		checkReplies(t, o, got.Code, f.replies)
	}
	if codes[proto.CodeWaitForMessages] < 2 || codes[proto.CodeCancelDeferredRequest] != 1 {
		t.Errorf("the session sent %v: the test no longer covers waits and a cancel", codes)
	}
	for seed := uint64(1); seed <= 60; seed++ {
		body, v := oracleReply(t, o, proto.CodeWaitForMessages, seed)
		w, err := proto.DecodeWaitReply(body)
		if err != nil {
			t.Fatalf("seed %d: %v\n%x", seed, err, body)
		}
		want := v["partitions"].([]any)
		if w.Len() != len(want) {
			t.Fatalf("seed %d: kiggy read %d partitions, the crate wrote %v", seed, w.Len(), want)
		}
		for i, p := range want {
			if uint64(w.Partition(i)) != num(p) {
				t.Errorf("seed %d partition %d: kiggy read %d, the crate wrote %v", seed, i, w.Partition(i), p)
			}
		}
	}
}

// TestWait012Limits: the limits of a wait, at and past each edge, are
// judged alike by the crate (decode and validate), proto.ValidateWait and
// the 0.12 model (3 InvalidCommand for a refused one).
func TestWait012Limits(t *testing.T) {
	o := iggycodec.Start(t)
	_, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect012}})
	c := open(t, Config{Addr: addr})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "lim", proto.MaxPartitionsPerRequest+1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	seq := func(n int) []uint32 {
		p := make([]uint32, n)
		for i := range p {
			p[i] = uint32(i)
		}
		return p
	}
	const margin = proto.MinDeferredReplyMarginMicros
	for _, tc := range []struct {
		name            string
		wait, timeout   uint64
		parts           []uint32
		valid           bool
		ranByServerWait bool
	}{
		{"zero wait, timeout 1", 0, 1, seq(1), true, false},
		{"the longest wait and timeout", proto.MaxDeferredWaitMicros, proto.MaxDeferredTimeoutMicros, seq(1), true, true},
		{"timeout 0", 0, 0, seq(1), false, false},
		{"timeout below the wait", 2, 1, seq(1), false, false},
		{"timeout at the wait plus the margin", 1, 1 + margin, seq(1), true, true},
		{"timeout under the wait plus the margin", 1, margin, seq(1), false, false},
		{"wait past the ceiling", proto.MaxDeferredWaitMicros + 1, proto.MaxDeferredTimeoutMicros, seq(1), false, false},
		{"timeout past the ceiling", 1, proto.MaxDeferredTimeoutMicros + 1, seq(1), false, false},
		{"no partitions", 0, 1, nil, false, false},
		{"1000 partitions", 0, 1, seq(proto.MaxPartitionsPerRequest), true, false},
		{"1001 partitions", 0, 1, seq(proto.MaxPartitionsPerRequest + 1), false, false},
		{"a duplicate partition", 0, 1, []uint32{3, 3}, false, false},
	} {
		offs := make([]uint64, len(tc.parts))
		for i := range offs {
			offs[i] = 1 // nothing there: a valid wait with a wait waits
		}
		body := proto.AppendWaitForMessages(nil, "kafka", "lim", tc.wait, tc.timeout, tc.parts, offs)
		_, crateErr := o.Check(waitFrame(proto.CodeWaitForMessages, body))
		var refused *iggycodec.Refused
		if crateErr != nil && !errors.As(crateErr, &refused) {
			t.Fatal(crateErr)
		}
		if (crateErr == nil) != tc.valid {
			t.Errorf("%s: the crate says valid=%v (%v), want %v", tc.name, crateErr == nil, crateErr, tc.valid)
		}
		// ValidateWait takes the partitions sorted, as kiggy sends them;
		// its duplicate check is the same as the crate's on them.
		if err := proto.ValidateWait(tc.wait, tc.timeout, tc.parts); (err == nil) != tc.valid {
			t.Errorf("%s: ValidateWait says %v, want valid=%v", tc.name, err, tc.valid)
		}
		if tc.ranByServerWait {
			continue // a valid wait of minutes: not sent to the model
		}
		s, err := c.acquire(cx)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.do(cx, proto.CodeWaitForMessages, append(s.begin(), body...))
		c.release(s)
		if tc.valid && err != nil || !tc.valid && codeOf(err) != proto.CodeInvalidCommand {
			t.Errorf("%s: the model answers %v, want valid=%v (else InvalidCommand)", tc.name, err, tc.valid)
		}
	}
	// A strategy the server does not take, and trailing bytes.
	body := proto.AppendWaitForMessages(nil, "kafka", "lim", 0, 1, []uint32{0}, []uint64{0})
	first := body[len(body)-9:]
	first[0] = proto.PollFirst
	if _, err := o.Check(waitFrame(proto.CodeWaitForMessages, body)); err != nil {
		t.Errorf("the crate's decoder refuses strategy first (only the server does): %v", err)
	}
	s, err := c.acquire(cx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release(s)
	if _, _, err := s.do(cx, proto.CodeWaitForMessages, append(s.begin(), body...)); codeOf(err) != proto.CodeInvalidCommand {
		t.Errorf("the model takes strategy first: %v", err)
	}
	first[0] = proto.PollOffset
	trailing := append(body, 0)
	if _, err := o.Check(waitFrame(proto.CodeWaitForMessages, trailing)); err == nil {
		t.Error("the crate takes a trailing byte")
	}
	if _, _, err := s.do(cx, proto.CodeWaitForMessages, append(s.begin(), trailing...)); codeOf(err) != proto.CodeInvalidCommand {
		t.Errorf("the model takes a trailing byte: %v", err)
	}
	if _, err := o.Check(waitFrame(proto.CodeCancelDeferredRequest, []byte{0})); err == nil {
		t.Error("the crate takes a CancelDeferredRequest with a body")
	}
}

package iggy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

var quiet = slog.New(slog.DiscardHandler)

func startServer(t testing.TB, cfg iggytest.Config) (*iggytest.Server, string) {
	t.Helper()
	srv := iggytest.New(cfg)
	addr, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, addr.String()
}

// Environment to run the tests that need no fault injection against a real
// iggy-server instead of iggytest.
const (
	envAddr     = "KIGGY_IGGY_ADDR"
	envUsername = "KIGGY_IGGY_USERNAME"
	envPassword = "KIGGY_IGGY_PASSWORD"
)

// target returns the server address and a stream for a test: the real
// server named by KIGGY_IGGY_ADDR with a stream unique to this run; else a
// fresh real iggy-server (internal/testing/iggyserver) unless KIGGY_TEST_IGGY=model
// or none is found; else a fresh in-process iggytest.
func target(t testing.TB) (addr, stream string) {
	t.Helper()
	if a := os.Getenv(envAddr); a != "" {
		return a, fmt.Sprintf("kiggy-%s-%d", t.Name(), time.Now().UnixNano())
	}
	if realServer(t) {
		return iggyserver.StartT(t).Addr, "kafka"
	}
	_, addr = startServer(t, iggytest.Config{})
	return addr, "kafka"
}

// realServer reports whether target starts a real iggy-server
// (KIGGY_TEST_IGGY: "server" requires one, "model" never uses one, unset
// uses one when found).
func realServer(t testing.TB) bool {
	switch os.Getenv("KIGGY_TEST_IGGY") {
	case "model":
		return false
	case "server":
		iggyserver.Require(t)
		return true
	}
	return iggyserver.Available()
}

func open(t testing.TB, cfg Config) *Client {
	t.Helper()
	if os.Getenv(envAddr) != "" && cfg.Addr == os.Getenv(envAddr) && cfg.Token == "" {
		cfg.Username, cfg.Password = os.Getenv(envUsername), os.Getenv(envPassword)
	}
	if cfg.Username == "" && cfg.Token == "" {
		cfg.Username, cfg.Password = iggyserver.Username, iggyserver.Password
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// batchOf builds a batch of messages "p<i>" with one header each, origin
// timestamps origin, origin+1, ...
func batchOf(origin uint64, prefix string, n int) *message.Batch {
	return buildBatch(false, origin, prefix, n)
}

// stampedBatchOf is batchOf with every frame stamped as it is built
// (message.Batch.Checksums), as the gateway's Produce batches are.
func stampedBatchOf(origin uint64, prefix string, n int) *message.Batch {
	return buildBatch(true, origin, prefix, n)
}

func buildBatch(checksums bool, origin uint64, prefix string, n int) *message.Batch {
	b := message.Batch{Checksums: checksums}
	b.Reset(origin)
	for i := range n {
		b.Begin(origin + uint64(i))
		b.AppendPayloadString(fmt.Sprintf("%s%d", prefix, i))
		b.MarkHeaders()
		b.AppendHeader(message.KindString, "kafka.v", message.KindRaw, []byte{1})
		b.End()
	}
	return &b
}

type got struct {
	off     int64
	payload string
	origin  uint64
	ts      uint64
	headers []byte
}

func readAll(t *testing.T, c *Client, topic string, p int32, from int64, maxBytes int) ([]got, store.Watermarks) {
	t.Helper()
	var out []got
	wm, err := c.Read(ctx(t), topic, p, from, maxBytes, func(m *message.Message) bool {
		out = append(out, got{m.Offset, string(m.Payload), m.OriginTimestamp, m.Timestamp, append([]byte(nil), m.Headers...)})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, wm
}

func TestOpenErrors(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{Tokens: []string{"secret-token"}})

	// Unreachable: a port nobody listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	_, err := Open(ctx(t), Config{Addr: dead, Logger: quiet, DialTimeout: time.Second})
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrAuth) {
		t.Fatalf("unreachable: %v", err)
	}

	_, err = Open(ctx(t), Config{Addr: addr, Password: "wrong", Logger: quiet})
	var ev *EvictionError
	if !errors.Is(err, ErrAuth) || !errors.As(err, &ev) || ev.Reason != proto.EvictInvalidCredentials {
		t.Fatalf("bad password: %v", err)
	}
	_, err = Open(ctx(t), Config{Addr: addr, Token: "nope", Logger: quiet})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("bad token: %v", err)
	}
	c := open(t, Config{Addr: addr, Token: "secret-token"})
	if err := c.Ready(ctx(t)); err != nil {
		t.Fatal(err)
	}

	// A server that evicts every login with IncompatibleProtocol (reason 14).
	fake := fakeServer(t, func(req []byte) []byte {
		h := make([]byte, proto.HeaderSize)
		proto.PutEvictionHeader(h, proto.ClientID{Lo: 1}, proto.EvictIncompatibleProtocol, 12<<10, 12<<10)
		return h
	})
	_, err = Open(ctx(t), Config{Addr: fake, Logger: quiet})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "0.12.0") {
		t.Fatalf("incompatible: %v", err)
	}
	// Something that is not an Iggy 0.9 server: it answers with an 0.8-style
	// [status][length] reply.
	old := fakeServer(t, func(req []byte) []byte { return []byte{0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0} })
	_, err = Open(ctx(t), Config{Addr: old, Logger: quiet, DialTimeout: time.Second})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("0.8 server: %v", err)
	}
	if _, err := Open(ctx(t), Config{Addr: addr, PoolSize: -1}); err == nil {
		t.Fatal("invalid config accepted")
	}
}

// fakeServer answers every request frame with answer(frame).
func fakeServer(t *testing.T, answer func([]byte) []byte) string {
	return serveFake(t, answer, func(c net.Conn, out []byte) error { _, err := c.Write(out); return err })
}

// serveFake runs a loopback server that answers every request frame with
// answer(frame), sent with write.
func serveFake(t *testing.T, answer func([]byte) []byte, write func(c net.Conn, out []byte) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetNoDelay(true)
				}
				h := make([]byte, proto.HeaderSize)
				for {
					if _, err := io.ReadFull(c, h); err != nil {
						return
					}
					body := make([]byte, proto.FrameSize(h)-proto.HeaderSize)
					if _, err := io.ReadFull(c, body); err != nil {
						return
					}
					if err := write(c, answer(append(h, body...))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestTopics(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream})
	cx := ctx(t)
	info, err := c.CreateTopic(cx, "orders", 3, store.TopicConfig{MessageExpiry: time.Hour, MaxBytes: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	want := store.TopicInfo{Name: "orders", ID: info.ID, Partitions: 3, Config: store.TopicConfig{MessageExpiry: time.Hour, MaxBytes: 2 << 30, Durability: store.DurabilityWritten}}
	if info != want || info.ID == ([16]byte{}) {
		t.Fatalf("CreateTopic = %+v", info)
	}
	if got, err := c.Topic(cx, "orders"); err != nil || got != want {
		t.Fatalf("Topic = %+v, %v", got, err)
	}
	if _, err := c.CreateTopic(cx, "orders", 1, store.TopicConfig{}); !errors.Is(err, store.ErrTopicExists) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := c.CreateTopic(cx, "x", 0, store.TopicConfig{}); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Fatalf("0 partitions: %v", err)
	}
	if _, err := c.CreateTopic(cx, "small", 1, store.TopicConfig{MaxBytes: 1000}); !errors.Is(err, store.ErrInvalidConfig) {
		t.Fatalf("max bytes below segment size: %v", err)
	}
	plain, err := c.CreateTopic(cx, "plain", 1, store.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.Topics(cx)
	if err != nil || len(list) != 2 || list[0] != want || list[1] != (store.TopicInfo{Name: "plain", ID: plain.ID, Partitions: 1, Config: store.TopicConfig{Durability: store.DurabilityWritten}}) {
		t.Fatalf("Topics = %+v, %v", list, err)
	}
	if err := c.CreatePartitions(cx, "orders", 5); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Topic(cx, "orders"); got.Partitions != 5 {
		t.Fatalf("after CreatePartitions: %+v", got)
	}
	if err := c.CreatePartitions(cx, "orders", 5); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Fatalf("no growth: %v", err)
	}
	if err := c.CreatePartitions(cx, "nope", 5); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("unknown: %v", err)
	}
	if err := c.DeleteTopic(cx, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(cx, "orders"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := c.Topic(cx, "orders"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("Topic after delete: %v", err)
	}
	if _, err := c.Watermarks(cx, "orders", 0); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("Watermarks after delete: %v", err)
	}
}

func TestAppendRead(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 2})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "t", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, wm := readAll(t, c, "t", 1, 0, 1<<20); wm != (store.Watermarks{}) {
		t.Fatalf("empty partition watermarks %+v", wm)
	}
	if msgs, wm := readAll(t, c, "t", 1, 5, 1<<20); len(msgs) != 0 || wm != (store.Watermarks{}) {
		t.Fatalf("read past end of empty: %v %+v", msgs, wm)
	}
	const origin = 1_700_000_000_000_000
	for i, want := range []int64{0, 5, 8} {
		n := []int{5, 3, 4}[i]
		base, err := c.Append(cx, "t", 1, batchOf(origin+uint64(i)*1000, fmt.Sprintf("b%d-", i), n))
		if err != nil || base != want {
			t.Fatalf("Append %d = %d, %v; want %d", i, base, err, want)
		}
	}
	msgs, wm := readAll(t, c, "t", 1, 0, 1<<20)
	if len(msgs) != 12 || wm != (store.Watermarks{High: 12}) {
		t.Fatalf("read all: %d messages, %+v", len(msgs), wm)
	}
	for i, m := range msgs {
		if m.off != int64(i) {
			t.Fatalf("message %d has offset %d", i, m.off)
		}
	}
	if m := msgs[6]; m.payload != "b1-1" || m.origin != origin+1000+1 || m.ts == 0 || msgs[5].ts != m.ts || msgs[4].ts >= m.ts {
		t.Fatalf("message 6: %+v", m)
	}
	h, rest, err := message.NextHeader(msgs[0].headers)
	if err != nil || string(h.Key) != "kafka.v" || !bytes.Equal(h.Value, []byte{1}) || len(rest) != 0 {
		t.Fatalf("headers %x", msgs[0].headers)
	}
	// Offset 6 starts inside the second record: earlier messages are skipped.
	if msgs, _ := readAll(t, c, "t", 1, 6, 1<<20); len(msgs) != 6 || msgs[0].off != 6 {
		t.Fatalf("read from 6: %+v", msgs)
	}
	// maxBytes: "b0-0" + a 18-byte header = 22 bytes per message.
	if msgs, _ := readAll(t, c, "t", 1, 0, 50); len(msgs) != 2 { // 22 bytes each; a third would exceed 50
		t.Fatalf("maxBytes 50 delivered %d", len(msgs))
	}
	if msgs, _ := readAll(t, c, "t", 1, 0, 0); len(msgs) != 1 {
		t.Fatalf("maxBytes 0 delivered %d, want at least one", len(msgs))
	}
	n := 0
	if _, err := c.Read(cx, "t", 1, 0, 1<<20, func(*message.Message) bool { n++; return n < 2 }); err != nil || n != 2 {
		t.Fatalf("fn stop: %d %v", n, err)
	}
	if msgs, wm := readAll(t, c, "t", 1, 12, 1<<20); len(msgs) != 0 || wm.High != 12 {
		t.Fatalf("read at HW: %v %+v", msgs, wm)
	}
	if wm, err := c.Watermarks(cx, "t", 1); err != nil || wm != (store.Watermarks{High: 12}) {
		t.Fatalf("Watermarks = %+v, %v", wm, err)
	}
	// One message at offset 0: current_offset is 0 there too.
	if _, err := c.Append(cx, "t", 0, batchOf(origin, "x", 1)); err != nil {
		t.Fatal(err)
	}
	if wm, err := c.Watermarks(cx, "t", 0); err != nil || wm != (store.Watermarks{High: 1}) {
		t.Fatalf("single-message Watermarks = %+v, %v", wm, err)
	}
	if msgs, wm := readAll(t, c, "t", 0, 1, 1<<20); len(msgs) != 0 || wm.High != 1 {
		t.Fatalf("read at HW 1: %v %+v", msgs, wm)
	}

	// Error paths.
	if _, err := c.Append(cx, "t", 2, batchOf(origin, "x", 1)); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("append unknown partition: %v", err)
	}
	if _, err := c.Append(cx, "missing", 0, batchOf(origin, "x", 1)); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("append unknown topic: %v", err)
	}
	if _, err := c.Read(cx, "t", 7, 0, 100, func(*message.Message) bool { return true }); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("read unknown partition: %v", err)
	}
	if _, err := c.Read(cx, "missing", 0, 0, 100, func(*message.Message) bool { return true }); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("read unknown topic: %v", err)
	}
	if _, err := c.Watermarks(cx, "t", 9); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("watermarks unknown partition: %v", err)
	}
	// A partition added by someone else is found after the cache misses.
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	if err := other.CreatePartitions(cx, "t", 3); err != nil {
		t.Fatal(err)
	}
	if base, err := c.Append(cx, "t", 2, batchOf(origin, "x", 1)); err != nil || base != 0 {
		t.Fatalf("append to new partition: %d %v", base, err)
	}
}

// TestViewsAliasReplyBuffer shows the Message views are only valid during fn:
// the next request reuses the buffer (the uncached path; cached chunks are
// recycled once evicted).
func TestViewsAliasReplyBuffer(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, ReadCacheBytes: -1})
	cx := ctx(t)
	c.CreateTopic(cx, "v", 1, store.TopicConfig{})
	c.Append(cx, "v", 0, batchOf(1, "aaaa", 1))
	c.Append(cx, "v", 0, batchOf(1, "bbbb", 1))
	var kept []byte
	c.Read(cx, "v", 0, 0, 1, func(m *message.Message) bool { kept = m.Payload; return false })
	if string(kept) != "aaaa0" {
		t.Fatalf("payload %q", kept)
	}
	c.Read(cx, "v", 0, 1, 1, func(m *message.Message) bool { return false })
	if string(kept) != "bbbb0" {
		t.Fatalf("the view kept after fn returned should now show the next reply, got %q", kept)
	}
}

func TestOffsetForTime(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream})
	cx := ctx(t)
	c.CreateTopic(cx, "ts", 1, store.TopicConfig{})
	now := uint64(time.Now().UnixMicro())
	c.Append(cx, "ts", 0, batchOf(now-3_000_000, "a", 3)) // origins now-3s, +1µs, +2µs
	c.Append(cx, "ts", 0, batchOf(now-1_000_000, "b", 2))
	cases := []struct {
		ts  uint64
		off int64
		ok  bool
	}{
		{0, 0, true},
		{now - 3_000_000 + 1, 1, true},
		{now - 2_000_000, 3, true},
		{now - 1_000_000 + 1, 4, true},
		{now + 60_000_000, 0, false},
	}
	for _, k := range cases {
		off, ok, err := c.OffsetForTime(cx, "ts", 0, k.ts)
		if err != nil || off != k.off || ok != k.ok {
			t.Errorf("OffsetForTime(%d) = %d %v %v, want %d %v", k.ts, off, ok, err, k.off, k.ok)
		}
	}
	if _, _, err := c.OffsetForTime(cx, "nope", 0, 0); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}

func TestCommitFetch(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream})
	cx := ctx(t)
	c.CreateTopic(cx, "o", 2, store.TopicConfig{})
	fetch := func(c *Client, p int32) (int64, string, bool) {
		t.Helper()
		off, md, ok, err := c.FetchOffset(cx, "g1", "o", p)
		if err != nil {
			t.Fatal(err)
		}
		return off, md, ok
	}
	if _, _, ok := fetch(c, 0); ok {
		t.Fatal("offset before any commit")
	}
	// Java commits 0 on an empty partition.
	if err := c.CommitOffset(cx, "g1", "o", 0, 0, "meta-0"); err != nil {
		t.Fatal(err)
	}
	if off, md, ok := fetch(c, 0); !ok || off != 0 || md != "meta-0" {
		t.Fatalf("after commit 0: %d %q %v", off, md, ok)
	}
	c.Append(cx, "o", 0, batchOf(1, "m", 4)) // offsets 0..3
	// A caught-up consumer commits last+1 = 4.
	if err := c.CommitOffset(cx, "g1", "o", 0, 4, "caught-up"); err != nil {
		t.Fatal(err)
	}
	if off, md, ok := fetch(c, 0); !ok || off != 4 || md != "caught-up" {
		t.Fatalf("after commit 4: %d %q %v", off, md, ok)
	}
	if err := c.CommitOffset(cx, "g1", "o", 0, 2, ""); err != nil {
		t.Fatal(err)
	}
	// A second client (a restarted gateway) sees the Iggy value, without the
	// metadata kept in the first one's memory.
	c2 := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	if off, md, ok := fetch(c2, 0); !ok || off != 2 || md != "" {
		t.Fatalf("restarted view: %d %q %v", off, md, ok)
	}
	// Beyond the end: kept in memory only.
	if err := c.CommitOffset(cx, "g1", "o", 0, 10, "ahead"); err != nil {
		t.Fatal(err)
	}
	if off, md, ok := fetch(c, 0); !ok || off != 10 || md != "ahead" {
		t.Fatalf("ahead: %d %q %v", off, md, ok)
	}
	if _, _, ok := fetch(c2, 0); ok {
		t.Fatal("a commit kept in memory must not leave the old Iggy value behind")
	}
	// Another gateway's later commit wins over this one's memory.
	if err := c2.CommitOffset(cx, "g1", "o", 0, 3, ""); err != nil {
		t.Fatal(err)
	}
	if off, _, ok := fetch(c, 0); !ok || off != 3 {
		t.Fatalf("other writer: %d %v", off, ok)
	}
	// Negative deletes.
	if err := c.CommitOffset(cx, "g1", "o", 0, -1, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := fetch(c, 0); ok {
		t.Fatal("offset after delete")
	}
	if err := c.CommitOffset(cx, "g1", "o", 0, -1, ""); err != nil {
		t.Fatalf("delete twice: %v", err)
	}
	if err := c.CommitOffset(cx, "g1", "o", 5, 1, ""); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
	if err := c.CommitOffset(cx, "g1", "nope", 0, 1, ""); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := c.CommitOffset(cx, strings.Repeat("g", 247), "o", 0, 1, ""); !errors.Is(err, ErrInvalidGroup) {
		t.Fatalf("long group: %v", err)
	}
}

func TestReconnectAfterRestart(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 2, ReconnectBackoffMin: 10 * time.Millisecond, ReconnectBackoffMax: 50 * time.Millisecond})
	cx := ctx(t)
	c.CreateTopic(cx, "r", 1, store.TopicConfig{})
	for range 3 {
		if _, err := c.Append(cx, "r", 0, batchOf(1, "before", 2)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	_, err := c.Append(cx, "r", 0, batchOf(1, "down", 1))
	if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("append while down: %v", err)
	}
	if err := c.Ready(cx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ready while down: %v", err)
	}
	if _, err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	var base int64
	testtools.Eventually(5*time.Second, func() bool {
		base, err = c.Append(cx, "r", 0, batchOf(1, "after", 1))
		return err == nil
	})
	if err != nil || base != 6 {
		t.Fatalf("append after restart: %d %v", base, err)
	}
	msgs, _ := readAll(t, c, "r", 0, 0, 1<<20)
	if len(msgs) != 7 || msgs[5].payload != "before1" || msgs[6].payload != "after0" {
		t.Fatalf("after restart: %+v", msgs)
	}
}

// TestRequestTimeout: on 0.11 a write whose reply does not come is of
// unknown outcome (0.12 learns it: TestRebindLearnsLostWriteOutcome).
func TestRequestTimeout(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{Dialects: []proto.Dialect{proto.Dialect011}})
	c := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 300 * time.Millisecond})
	cx := ctx(t)
	c.CreateTopic(cx, "to", 1, store.TopicConfig{})

	// The server silently drops the frame (as it does a bad batch).
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Drop: true})
	start := time.Now()
	_, err := c.Append(cx, "to", 0, batchOf(1, "lost", 1))
	if !errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("dropped frame: %v", err)
	}
	// Not a speed check: the request must end by its 300 ms timeout, not run
	// to the 30 s default (a loaded CI machine took 4.3 s to get there).
	if el := time.Since(start); el < 250*time.Millisecond || el > 15*time.Second {
		t.Fatalf("timeout after %v", el)
	}
	// The reply is lost after the write: the record is stored.
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Drop: true, Apply: true})
	if _, err := c.Append(cx, "to", 0, batchOf(1, "stored", 1)); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("lost reply: %v", err)
	}
	// The connection was dropped; the next request reconnects.
	if base, err := c.Append(cx, "to", 0, batchOf(1, "next", 1)); err != nil || base != 1 {
		t.Fatalf("after timeout: %d %v", base, err)
	}
	// Reads time out too, and are ErrUnavailable (safe to retry).
	srv.InjectFault(iggytest.Fault{Op: proto.OpNonReplicated, Code: proto.CodePollMessages, Drop: true})
	if _, err := c.Read(cx, "to", 0, 0, 100, func(*message.Message) bool { return true }); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read timeout: %v", err)
	}
	// A context deadline shorter than RequestTimeout wins.
	slow := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 10 * time.Second})
	if err := slow.Ready(cx); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Drop: true})
	short, cancel := context.WithTimeout(cx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := slow.Append(short, "to", 0, batchOf(1, "ctx", 1)); !errors.Is(err, store.ErrUnknownOutcome) || time.Since(start) > 8*time.Second {
		t.Fatalf("ctx deadline: %v after %v", err, time.Since(start))
	}
}

func TestTransientReplay(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1})
	cx := ctx(t)
	c.CreateTopic(cx, "tr", 1, store.TopicConfig{})
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: uint32(proto.CodeTransientNotCommitted), Count: 2})
	srv.InjectFault(iggytest.Fault{Op: proto.OpCreateTopic, Status: uint32(proto.CodeTransientNotAccepted), Count: 1})
	if base, err := c.Append(cx, "tr", 0, batchOf(1, "x", 2)); err != nil || base != 0 {
		t.Fatalf("append through 57: %d %v", base, err)
	}
	if _, err := c.CreateTopic(cx, "tr2", 1, store.TopicConfig{}); err != nil {
		t.Fatalf("create through 58: %v", err)
	}
	// An unknown server code is wrapped with its number.
	srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: 777})
	if _, err := c.Append(cx, "tr", 0, batchOf(1, "x", 1)); err == nil || !strings.Contains(err.Error(), "777") {
		t.Fatalf("unknown code: %v", err)
	}
}

func TestKeepAlivePing(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, PingInterval: 20 * time.Millisecond})
	t0 := time.Now()
	time.Sleep(300 * time.Millisecond) // idle for 15 ping intervals: the pinger must act by itself
	s, err := c.acquire(ctx(t))        // exclusive: the pinger cannot touch it now
	if err != nil {
		t.Fatal(err)
	}
	defer c.release(s)
	if !s.lastUsed.After(t0) {
		t.Fatal("an idle session was not pinged")
	}
}

// TV11: the PollMessages body layout; kiggy names stream and topic.
func TestTV11PollBody(t *testing.T) {
	c := &Client{cfg: Config{Stream: "s"}}
	s := newSession(c)
	req := c.pollRequest(s, "t", 0, proto.PollOffset, 0, 10)
	want, _ := hex.DecodeString("01" + "010400000000" + "020173" + "020174" + "01" + "00000000" + "01" + "0000000000000000" + "0a000000" + "00")
	if !bytes.Equal(req[proto.HeaderSize:], want) {
		t.Fatalf("poll body %x", req[proto.HeaderSize:])
	}
}

// TV14: StoreConsumerOffset tail (partition flag, id, offset 41, Quorum).
func TestTV14StoreOffsetBody(t *testing.T) {
	c := &Client{cfg: Config{Stream: "s"}}
	s := newSession(c)
	req := proto.AppendU64(c.offsetRequest(s, "g", "t", 0), 41)
	req = append(req, 1)
	want, _ := hex.DecodeString("01" + "020a" + hex.EncodeToString([]byte("kafka.cg.g")) + "020173" + "020174" + "01" + "00000000" + "2900000000000000" + "01")
	if !bytes.Equal(req[proto.HeaderSize:], want) {
		t.Fatalf("store body %x", req[proto.HeaderSize:])
	}
}

func TestDecodeConfirmation(t *testing.T) {
	b, _ := hex.DecodeString("01000000010000000200000003000000" + "0400000000000000")
	if base, err := decodeConfirmation(b); err != nil || base != 4 {
		t.Fatal(base, err)
	}
	if _, err := decodeConfirmation(nil); !errors.Is(err, errDeadSession) {
		t.Fatal(err)
	}
	if base, err := decodeConfirmation([]byte{0, 0, 0, 0}); err != nil || base != -1 {
		t.Fatal(base, err)
	}
	if _, err := decodeConfirmation(b[:10]); err == nil {
		t.Fatal("truncated accepted")
	}
	_ = binary.LittleEndian
}

// fakePeer serves a minimal Iggy 0.9 peer on loopback: every login
// succeeds, GetStream finds the stream, and answer (if not nil) gives the
// body of any other reply and may change its header. write sends each reply.
func fakePeer(t *testing.T, answer func(req *proto.RequestHeader) []byte, write func(c net.Conn, frame []byte) error) string {
	return serveFake(t, func(frame []byte) []byte {
		req := proto.ParseRequestHeader(frame)
		var rb []byte
		switch {
		case req.Operation == proto.OpRegister:
			rb = proto.AppendResultOK(nil)
			rb = proto.AppendU32(rb, 0)
			rb = proto.AppendU64(rb, 3)
			rb = proto.AppendU32(rb, proto.Dialect011.Version())
			rb = proto.AppendName(rb, "fake")
		case req.Code == proto.CodeGetStream:
			rb = []byte{1} // "found": any non-empty body
		case answer != nil:
			rb = answer(&req)
		}
		out := make([]byte, proto.HeaderSize)
		proto.PutReplyHeader(out, len(rb), &req, 3, 3, 0)
		return append(out, rb...)
	}, write)
}

// TestRepliesOneByteAtATime serves login and ping replies in 1-byte writes:
// the client must reassemble frames split at every offset.
func TestRepliesOneByteAtATime(t *testing.T) {
	addr := fakePeer(t, nil, func(c net.Conn, out []byte) error {
		for i := range out {
			if _, err := c.Write(out[i : i+1]); err != nil {
				return err
			}
		}
		return nil
	})
	c := open(t, Config{Addr: addr, PoolSize: 1, noCommitLog: true})
	for range 3 {
		if err := c.Ready(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDesyncIsNotProtocol: a reply for another request on a live session
// is reported as a desynchronised connection, not as an incompatible
// protocol (ErrProtocol is the start-up diagnosis).
func TestDesyncIsNotProtocol(t *testing.T) {
	addr := fakePeer(t, func(req *proto.RequestHeader) []byte {
		if req.Code == proto.CodePing {
			req.Request += 7 // answer another request
		}
		return nil
	}, func(c net.Conn, out []byte) error { _, err := c.Write(out); return err })
	c := open(t, Config{Addr: addr, PoolSize: 1, noCommitLog: true})
	err := c.Ready(ctx(t))
	if !errors.Is(err, errDesync) || errors.Is(err, ErrProtocol) {
		t.Fatalf("Ready = %v, want errDesync and not ErrProtocol", err)
	}
}

// TestTransientWaitHonoursCancel: a request the server keeps answering 58
// stops when its context is cancelled, not at RequestTimeout.
func TestTransientWaitHonoursCancel(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1, RequestTimeout: 30 * time.Second})
	srv.InjectFault(iggytest.Fault{Op: proto.OpCreateTopic, Count: 1 << 20, Status: uint32(proto.CodeTransientNotAccepted)})
	cx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.CreateTopic(cx, "never", 1, store.TopicConfig{})
	if took := time.Since(start); took > 5*time.Second || !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateTopic returned %v after %v, want context.Canceled soon after 200ms", err, took)
	}
}

// TestAppendJoined: stamped batches rebased onto one origin go out as one
// SendMessages written from their own buffers; the server admits the batch
// (a frame or batch checksum wrong is dropped), and the messages read back in
// order, with their payloads and origin timestamps, at consecutive offsets
// from the returned base. Batches that are not stamped, or not on one
// origin, are refused before anything is sent.
func TestAppendJoined(t *testing.T) {
	addr, stream := target(t)
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "j", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	const origin = 1_700_000_000_000_000
	if _, err := c.Append(cx, "j", 0, batchOf(origin, "pre-", 2)); err != nil {
		t.Fatal(err)
	}
	parts := []struct {
		origin uint64
		prefix string
		n      int
	}{{origin + 500, "a-", 3}, {origin + 100, "b-", 70}, {origin + 900, "c-", 1}}
	var bs []*message.Batch
	for _, p := range parts {
		bs = append(bs, stampedBatchOf(p.origin, p.prefix, p.n))
	}
	if _, err := c.AppendJoined(cx, "j", 0, bs); !errors.Is(err, store.ErrInvalidConfig) {
		t.Fatalf("batches on three origins: %v", err)
	}
	unstamped := []*message.Batch{batchOf(origin, "x-", 1), batchOf(origin, "y-", 1)}
	if _, err := c.AppendJoined(cx, "j", 0, unstamped); !errors.Is(err, store.ErrInvalidConfig) {
		t.Fatalf("unstamped batches: %v", err)
	}
	first := 0
	for _, b := range bs {
		b.Rebase(origin+100, first)
		first += b.Count
	}
	base, err := c.AppendJoined(cx, "j", 0, bs)
	if err != nil || base != 2 {
		t.Fatalf("AppendJoined = %d, %v; want base 2", base, err)
	}
	var msgs []got
	var wm store.Watermarks
	for len(msgs) < 2+first {
		more, w := readAll(t, c, "j", 0, int64(len(msgs)), 1<<20)
		if len(more) == 0 {
			break
		}
		msgs, wm = append(msgs, more...), w
	}
	if len(msgs) != 2+first || wm.High != int64(2+first) {
		t.Fatalf("read %d messages, high %d; want %d", len(msgs), wm.High, 2+first)
	}
	i := 2
	for _, p := range parts {
		for k := range p.n {
			m := msgs[i]
			if m.off != int64(i) || m.payload != fmt.Sprintf("%s%d", p.prefix, k) || m.origin != p.origin+uint64(k) {
				t.Fatalf("message %d: offset %d, %q, origin %d; want %s%d at origin %d", i, m.off, m.payload, m.origin, p.prefix, k, p.origin+uint64(k))
			}
			i++
		}
	}
}

package iggy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// syncBuffer is a bytes.Buffer safe for the client's background loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.TrimSpace(w.b.String()), "\n")
}

// TestAppendAudit checks the debug audit of confirmed appends: one line per
// confirmed SendMessages with the confirmed base offset, the count and the
// node that confirmed it, and none for an append that was not confirmed.
func TestAppendAudit(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{})
	var out syncBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1, Logger: log})
	cx := ctx(t)
	if _, err := c.CreateTopic(cx, "audit", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := c.Append(cx, "audit", 1, batchOf(uint64(1+i), "v-", 10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Append(cx, "audit", 7, batchOf(1, "v-", 3)); err == nil {
		t.Fatal("append to a missing partition succeeded")
	}
	type line struct {
		Msg        string `json:"msg"`
		Level      string `json:"level"`
		Stream     string `json:"stream"`
		Topic      string `json:"topic"`
		Partition  int    `json:"partition"`
		Base       int64  `json:"base"`
		Count      int    `json:"count"`
		Node       string `json:"node"`
		Primary    string `json:"primary"`
		Session    uint64 `json:"session"`
		Request    uint64 `json:"request"`
		NodeGen    uint64 `json:"node_gen"`
		PrimaryGen uint64 `json:"primary_gen"`
	}
	var got []line
	for _, s := range out.lines() {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		if l.Msg == "iggy: append confirmed" && l.Topic == "audit" {
			got = append(got, l)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d audit lines, want 2 (the two confirmed appends): %v", len(got), out.lines())
	}
	for i, l := range got {
		if l.Level != "DEBUG" || l.Stream != "kafka" || l.Partition != 1 || l.Base != int64(10*i) || l.Count != 10 {
			t.Errorf("audit line %d = %+v, want DEBUG audit/1 base %d count 10", i, l, 10*i)
		}
		if l.Node != addr || l.Primary != addr || l.NodeGen != l.PrimaryGen {
			t.Errorf("audit line %d names node %s (gen %d), primary %s (gen %d); want %s", i, l.Node, l.NodeGen, l.Primary, l.PrimaryGen, addr)
		}
		if l.Session == 0 || l.Request == 0 {
			t.Errorf("audit line %d has no session/request: %+v", i, l)
		}
	}
	if got[1].Request <= got[0].Request {
		t.Errorf("request numbers %d then %d on one session", got[0].Request, got[1].Request)
	}
}

// TestAppendAuditOff checks that no audit line is written unless debug
// logging is on.
func TestAppendAuditOff(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{})
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := open(t, Config{Addr: addr, PoolSize: 1, PingInterval: -1, Logger: log})
	cx := context.Background()
	if _, err := c.CreateTopic(cx, "audit", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(cx, "audit", 0, batchOf(1, "v-", 10)); err != nil {
		t.Fatal(err)
	}
	for _, s := range out.lines() {
		if strings.Contains(s, "append confirmed") {
			t.Fatalf("audit line at info level: %s", s)
		}
	}
}

package bridge_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// sharedStore is one embedded log with a system store two gateways share,
// as gateways on one Iggy share its system stream.
type sharedStore struct {
	*memlog.Log
	mu sync.Mutex
	ns map[string]map[string][]byte
}

func (s *sharedStore) LoadSystem(_ context.Context, ns string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ns[ns]), nil
}

func (s *sharedStore) PutSystem(ctx context.Context, ns, key string, value []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: value}})
}

func (s *sharedStore) PutSystemAll(_ context.Context, ns string, entries []store.SystemEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns[ns] == nil {
		s.ns[ns] = map[string][]byte{}
	}
	store.ApplySystemEntries(s.ns[ns], entries)
	return nil
}

// AdvanceLogStart keeps the records, as on Iggy: only the system store
// holds the log start.
func (s *sharedStore) AdvanceLogStart(context.Context, string, int32, int64) error { return nil }

// TestSharedTopicState: a config altered and records deleted through one
// gateway apply at the other gateway on the same system store within its
// refresh interval.
func TestSharedTopicState(t *testing.T) {
	shared := &sharedStore{Log: memlog.New(memlog.Config{}), ns: map[string]map[string][]byte{}}
	var _ store.SystemStore = shared
	fast := bridge.Config{StateRefresh: 20 * time.Millisecond}
	gw1 := kiggytest.Start(t, kiggytest.Options{Log: shared, Bridge: fast})
	gw2 := kiggytest.Start(t, kiggytest.Options{Log: shared, Bridge: fast})
	cl1, _ := kgo.NewClient(kgo.SeedBrokers(gw1.Addr), kgo.DefaultProduceTopic("shared"))
	defer cl1.Close()
	cl2, _ := kgo.NewClient(kgo.SeedBrokers(gw2.Addr))
	defer cl2.Close()
	adm1, adm2 := kadm.NewClient(cl1), kadm.NewClient(cl2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Both gateways read the (empty) state first.
	if res, err := adm2.CreateTopic(ctx, 1, -1, nil, "shared"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	describeTopic(t, adm1, "shared")
	for range 5 {
		if err := cl1.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := adm1.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: ptr("5000")}}, "shared"); err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "shared", Partition: 0, At: 3})
	if _, err := adm1.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	testtools.WaitFor(t, time.Until(deadline), "the other gateway to see segment.ms=5000", func() bool {
		return describeTopic(t, adm2, "shared")["segment.ms"].MaybeValue() == "5000"
	})
	testtools.WaitFor(t, time.Until(deadline), "the other gateway to see log start 3", func() bool {
		lo, err := adm2.ListStartOffsets(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lo.Lookup("shared", 0)
		return o.Offset == 3
	})
	if code, _, _ := fetchAt(t, cl2, "shared", 1); code != 1 {
		t.Errorf("fetch below the shared log start at the other gateway: code %d, want OFFSET_OUT_OF_RANGE", code)
	}
}

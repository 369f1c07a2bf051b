package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// boundedStore is a SystemStore that refuses, as the Iggy system store
// does, any change holding a value over limit bytes (store.ErrTooLarge),
// and records what it stored.
type boundedStore struct {
	limit  int
	stored map[string][]byte
	puts   int
}

func (s *boundedStore) LoadSystem(context.Context, string) (map[string][]byte, error) {
	return maps.Clone(s.stored), nil
}

func (s *boundedStore) PutSystem(ctx context.Context, ns, key string, v []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: v}})
}

func (s *boundedStore) PutSystemAll(_ context.Context, _ string, entries []store.SystemEntry) error {
	for _, e := range entries {
		if len(e.Value) > s.limit {
			return fmt.Errorf("entry %q: %w", e.Key, store.ErrTooLarge)
		}
	}
	s.puts++
	for _, e := range entries {
		if e.Value == nil {
			delete(s.stored, e.Key)
		} else {
			s.stored[e.Key] = e.Value
		}
	}
	return nil
}

// TestStoreClassicGroupsTooLarge: a change of stored groups that
// the store refuses as too large is written group by group; the group too
// large to store is removed instead (no older form of it is restored), and
// the others of the change are stored.
func TestStoreClassicGroupsTooLarge(t *testing.T) {
	s := &boundedStore{limit: 100, stored: map[string][]byte{"big": []byte("an older form")}}
	g := &Gateway{system: s, cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	g.storeGroupChange(classicGroupNS, []store.SystemEntry{
		{Key: "a", Value: []byte("small a")},
		{Key: "big", Value: make([]byte, 101)},
		{Key: "gone", Value: nil},
		{Key: "z", Value: []byte("small z")},
	})
	want := map[string][]byte{"a": []byte("small a"), "z": []byte("small z")}
	if !maps.EqualFunc(s.stored, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("stored %q, want %q", s.stored, want)
	}
	s.puts = 0
	g.storeGroupChange(classicGroupNS, []store.SystemEntry{{Key: "a", Value: []byte("a again")}, {Key: "z", Value: nil}})
	if s.puts != 1 || string(s.stored["a"]) != "a again" || s.stored["z"] != nil {
		t.Fatalf("a change within bounds: %d writes, stored %q", s.puts, s.stored)
	}
}

// TestStoreConsumerGroupsTooLarge: consumer groups are written a record
// per member; a group one of whose records the store refuses as too large
// is removed from the store, every record of it, while the groups written
// beside it are stored, and a group within bounds then writes only what
// changed.
func TestStoreConsumerGroupsTooLarge(t *testing.T) {
	s := &boundedStore{limit: 600, stored: map[string][]byte{}}
	g := &Gateway{ctx: context.Background(), system: s, groups: group.New(group.Config{}), cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	defer g.groups.Close()
	id := [16]byte{0x74, 2}
	topics := &topicSnapshot{byName: map[string]store.TopicInfo{"t": {Name: "t", ID: id, Partitions: 4}}, byID: map[[16]byte]string{id: "t"}, names: []string{"t"}}
	join := func(grp, member, rack string) {
		t.Helper()
		r := g.groups.ConsumerGroupHeartbeat(&group.ConsumerHeartbeat{Version: 1, GroupID: grp, MemberID: member, RebalanceTimeoutMillis: 30000,
			SubscribedTopicNames: []string{"t"}, HasSubscribedTopicNames: true, HasOwned: true, RackID: rack, HasRackID: rack != "", Topics: topics})
		if r.Error != 0 {
			t.Fatalf("%s/%s joins: %d %s", grp, member, r.Error, r.ErrorMessage)
		}
	}
	records := func(grp string) int {
		groups, _ := group.SplitConsumerGroups(s.stored)
		if sg, ok := groups[grp]; ok {
			return 1 + len(sg.Members)
		}
		return 0
	}
	join("a", "a1", "")
	join("big", "b1", "")
	join("z", "z1", "")
	g.storeConsumerGroups()
	if records("a") != 2 || records("big") != 2 || records("z") != 2 || s.puts != 1 {
		t.Fatalf("three groups of one member: %d writes, stored %q", s.puts, s.stored)
	}
	join("big", "b2", strings.Repeat("r", 700)) // a record past the bound
	join("a", "a2", "")
	g.storeConsumerGroups()
	if records("a") != 3 || records("big") != 0 || records("z") != 2 {
		t.Fatalf("a group with a record too large: stored %q", s.stored)
	}
	s.puts = 0
	join("z", "z2", "")
	g.storeConsumerGroups()
	if s.puts != 1 || records("z") != 3 {
		t.Fatalf("a change within bounds: %d writes, stored %q", s.puts, s.stored)
	}
}

// localPlacement makes this instance (node 1) every group's coordinator.
type localPlacement struct{}

func (localPlacement) Brokers() []store.Broker          { return nil }
func (localPlacement) Leader(string, int32) store.Route { return store.Route{Leader: 1, Serving: true} }
func (localPlacement) Coordinator(string) (int32, bool) { return 1, true }
func (localPlacement) Hold() uint64                     { return 0 }
func (localPlacement) Release(uint64)                   {}
func (s *countingStore) LoadSystem(ctx context.Context, ns string) (map[string][]byte, error) {
	s.reads++
	return s.boundedStore.LoadSystem(ctx, ns)
}

// countingStore counts LoadSystem calls.
type countingStore struct {
	*boundedStore
	reads int
}

// TestClassicRestorePaced: in a cluster, a request naming a member of a
// group the instance does not hold reads the stored groups and restores
// them; a flood of requests naming unknown groups reads the store at most
// 20 times a second, and one group id at most once per 10 s.
func TestClassicRestorePaced(t *testing.T) {
	stored := `{"v":1,"generation":3,"protocol_type":"consumer","protocol":"range","leader":"m","members":[{"id":"m","session_ms":10000,"protocols":[{"name":"range"}]}]}`
	s := &countingStore{boundedStore: &boundedStore{limit: 1 << 20, stored: map[string][]byte{"moved": []byte(stored)}}}
	g := &Gateway{ctx: context.Background(), system: s, groups: group.New(group.Config{}),
		cfg: Config{NodeID: 1, Placement: localPlacement{}, Logger: slog.New(slog.DiscardHandler)}}
	defer g.groups.Close()
	g.cgLoaded.Store(true)
	if !g.classicGroupReady("moved", true, 3) || s.reads != 1 {
		t.Fatalf("first request: %d reads", s.reads)
	}
	if code := g.groups.Heartbeat("moved", "m", "", false, 3); code != 0 {
		t.Fatalf("heartbeat of the restored group: %d", code)
	}
	g.classicGroupReady("moved", true, 3) // held now: no read
	g.classicGroupReady("unknown-0", false, noGeneration)
	if s.reads != 1 {
		t.Fatalf("a held group or a request naming no member read the store: %d reads", s.reads)
	}
	for i := range 1000 {
		g.classicGroupReady(fmt.Sprintf("unknown-%d", i%50), true, 1)
	}
	if s.reads > 1+20 {
		t.Fatalf("a flood of unknown groups read the store %d times", s.reads)
	}
	t.Logf("1,000 requests naming 50 unknown groups: %d reads", s.reads-1)
}

// TestClassicRestoreBehindReadAgain: in a cluster, a group restored here
// before its last coordinator stored its newest generation (the view moved
// it while a rebalance completed there) is read again, once, when a member
// names that generation: the member goes on at it instead of being told
// ILLEGAL_GENERATION and rejoining. A generation no store holds costs one
// more read, once per restored group.
func TestClassicRestoreBehindReadAgain(t *testing.T) {
	form := func(gen int) []byte {
		return []byte(fmt.Sprintf(`{"v":1,"generation":%d,"protocol_type":"consumer","protocol":"range","leader":"m","members":[{"id":"m","session_ms":10000,"protocols":[{"name":"range"}],"assignment":"YQ=="},{"id":"n","session_ms":10000,"protocols":[{"name":"range"}]}]}`, gen))
	}
	s := &countingStore{boundedStore: &boundedStore{limit: 1 << 20, stored: map[string][]byte{"moved": form(3), "other": form(5)}}}
	g := &Gateway{ctx: context.Background(), system: s, groups: group.New(group.Config{}),
		cfg: Config{NodeID: 1, Placement: localPlacement{}, Logger: slog.New(slog.DiscardHandler)}}
	defer g.groups.Close()
	g.cgLoaded.Store(true)
	g.classicGroupReady("moved", true, 3) // restores generation 3
	// The old coordinator's last write lands: generation 4.
	s.stored["moved"] = form(4)
	if !g.classicGroupReady("moved", true, 4) || s.reads != 2 {
		t.Fatalf("a member at a newer generation: %d reads, want 2", s.reads)
	}
	if code := g.groups.Heartbeat("moved", "m", "", false, 4); code != 0 {
		t.Fatalf("heartbeat at the generation stored last: %d", code)
	}
	if code := g.groups.Heartbeat("moved", "n", "", false, 4); code != 0 {
		t.Fatalf("the other member: %d", code)
	}
	// Once per restored group: a made-up generation reads no more.
	g.classicGroupReady("moved", true, 9)
	g.classicGroupReady("other", true, 9) // restored by the read above: one read of its own
	g.classicGroupReady("other", true, 9)
	if s.reads != 3 {
		t.Fatalf("made-up generations: %d reads, want 3", s.reads)
	}
	if code := g.groups.Heartbeat("other", "m", "", false, 9); code != 27 && code != 22 {
		t.Fatalf("a made-up generation answered %d", code)
	}
	// A form no newer than the group replaces nothing.
	if ok, err := g.groups.ReplaceRestored("moved", form(4)); ok || err != nil {
		t.Fatalf("replaced by a form of its own generation: %v %v", ok, err)
	}
}

// TestConsumerRestoreBehindReadAgain: the consumer-protocol counterpart of
// TestClassicRestoreBehindReadAgain. In a cluster, a member fenced for an
// epoch further on than the consumer group restored here has the store
// read again, once; the newer form replaces the group and the member's
// heartbeat at its epoch is then accepted.
func TestConsumerRestoreBehindReadAgain(t *testing.T) {
	id := [16]byte{0x74, 1}
	s := &countingStore{boundedStore: &boundedStore{limit: 1 << 20, stored: map[string][]byte{}}}
	storeAt := func(epoch int) {
		s.stored[group.ConsumerGroupHeadKey("moved")] = fmt.Appendf(nil, `{"v":2,"incarnation":9,"epoch":%d,"assignment_epoch":%d,"members":1}`, epoch, epoch)
		s.stored[group.ConsumerGroupMemberKey("moved", "a")] = fmt.Appendf(nil,
			`{"id":"a","epoch":%d,"state":0,"assigned":{"%x":[0,1]},"incarnation":9,"target":{"%x":[0,1]}}`, epoch, id, id)
	}
	storeAt(3)
	g := &Gateway{ctx: context.Background(), system: s, groups: group.New(group.Config{}),
		cfg: Config{NodeID: 1, Placement: localPlacement{}, Logger: slog.New(slog.DiscardHandler)}}
	defer g.groups.Close()
	if !g.loadConsumerGroup(context.Background(), "moved") {
		t.Fatal("the group was not restored")
	}
	topics := &topicSnapshot{byName: map[string]store.TopicInfo{"t": {Name: "t", ID: id, Partitions: 2}}, byID: map[[16]byte]string{id: "t"}, names: []string{"t"}}
	beat := func(epoch int32) int16 {
		return g.groups.ConsumerGroupHeartbeat(&group.ConsumerHeartbeat{Version: 1, GroupID: "moved", MemberID: "a",
			MemberEpoch: epoch, RebalanceTimeoutMillis: -1, Topics: topics}).Error
	}
	// The old coordinator's last write lands: epoch 4.
	storeAt(4)
	code := beat(4)
	if code != int16(wire.FencedMemberEpoch) {
		t.Fatalf("a member ahead of the restored group: %d", code)
	}
	reads := s.reads
	if !g.consumerRestoredBehind(code, "moved", "a", 4) || s.reads != reads+1 {
		t.Fatalf("not read again: %d reads", s.reads-reads)
	}
	if code := beat(4); code != 0 {
		t.Fatalf("heartbeat at the epoch stored last: %d", code)
	}
	// Once per restored group, and only for a fenced member.
	if g.consumerRestoredBehind(int16(wire.FencedMemberEpoch), "moved", "a", 9) || g.consumerRestoredBehind(0, "moved", "a", 9) || s.reads != reads+1 {
		t.Fatalf("read again twice: %d reads", s.reads-reads)
	}
}

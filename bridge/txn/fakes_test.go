package txn

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/store"
)

var errStore = errors.New("fake: system store down")

// memStore is an in-memory store.SystemStore that fails or blocks on
// demand.
type memStore struct {
	mu   sync.Mutex
	data map[string]map[string][]byte
	puts int
	// failPut, when set, is asked before each put; an error fails it and
	// nothing is stored. It may block (called without mu held).
	failPut func(ns, key string, v []byte) error
	loadErr error
}

func newMemStore() *memStore { return &memStore{data: make(map[string]map[string][]byte)} }

func (s *memStore) LoadSystem(_ context.Context, ns string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	out := make(map[string][]byte)
	for k, v := range s.data[ns] {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}

func (s *memStore) PutSystem(ctx context.Context, ns, key string, v []byte) error {
	return s.PutSystemAll(ctx, ns, []store.SystemEntry{{Key: key, Value: v}})
}

// PutSystemAll asks failPut of every entry before it stores any.
func (s *memStore) PutSystemAll(_ context.Context, ns string, entries []store.SystemEntry) error {
	s.mu.Lock()
	f := s.failPut
	s.mu.Unlock()
	for _, e := range entries {
		if f != nil {
			if err := f(ns, e.Key, e.Value); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.data[ns] == nil {
		s.data[ns] = make(map[string][]byte)
	}
	store.ApplySystemEntries(s.data[ns], entries)
	return nil
}

func (s *memStore) setFail(f func(ns, key string, v []byte) error) {
	s.mu.Lock()
	s.failPut = f
	s.mu.Unlock()
}

// failNS fails every put to namespace ns.
func (s *memStore) failNS(ns string) {
	s.setFail(func(n, _ string, _ []byte) error {
		if n == ns {
			return errStore
		}
		return nil
	})
}

func (s *memStore) get(ns, key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[ns][key]
	return v, ok
}

func (s *memStore) snapshot() map[string]map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string][]byte)
	for ns, m := range s.data {
		out[ns] = maps.Clone(m)
	}
	return out
}

func (s *memStore) putCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
}

type marker struct {
	Topic     string
	Partition int32
	Offset    int64
	C         mapping.Control
}

type offsetCommit struct {
	Group   string
	Offsets []Offset
}

// fakeBackend is a Backend over in-memory partitions: a marker takes the
// partition's next offset.
type fakeBackend struct {
	mu      sync.Mutex
	hw      map[partKey]int64
	markers []marker
	commits []offsetCommit
	nextPID int64
	noPIDs  bool

	hwErr     func(topic string, p int32) error
	markerErr func(topic string, p int32) error
	commitErr func(group string) error
	onMarker  func(m marker) // called before a marker is stored
}

func newFakeBackend() *fakeBackend { return &fakeBackend{hw: make(map[partKey]int64), nextPID: 1000} }

func (b *fakeBackend) HighWatermark(_ context.Context, topic string, p int32) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hwErr != nil {
		if err := b.hwErr(topic, p); err != nil {
			return 0, err
		}
	}
	return b.hw[partKey{topic, p}], nil
}

func (b *fakeBackend) WriteMarker(_ context.Context, topic string, p int32, c mapping.Control) (int64, error) {
	b.mu.Lock()
	if b.markerErr != nil {
		if err := b.markerErr(topic, p); err != nil {
			b.mu.Unlock()
			return 0, err
		}
	}
	k := partKey{topic, p}
	m := marker{topic, p, b.hw[k], c}
	hook := b.onMarker
	b.mu.Unlock()
	if hook != nil {
		hook(m)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	m.Offset = b.hw[k]
	b.hw[k]++
	b.markers = append(b.markers, m)
	return m.Offset, nil
}

func (b *fakeBackend) CommitOffsets(_ context.Context, group string, offsets []Offset) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.commitErr != nil {
		if err := b.commitErr(group); err != nil {
			return err
		}
	}
	b.commits = append(b.commits, offsetCommit{group, append([]Offset(nil), offsets...)})
	return nil
}

func (b *fakeBackend) NewProducerID() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noPIDs {
		return -1
	}
	b.nextPID++
	return b.nextPID - 1
}

// produce appends n records to topic/p.
func (b *fakeBackend) produce(topic string, p int32, n int64) {
	b.mu.Lock()
	b.hw[partKey{topic, p}] += n
	b.mu.Unlock()
}

func (b *fakeBackend) setHW(topic string, p int32, hw int64) {
	b.mu.Lock()
	b.hw[partKey{topic, p}] = hw
	b.mu.Unlock()
}

func (b *fakeBackend) getHW(topic string, p int32) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hw[partKey{topic, p}]
}

// markerList returns the markers written, by topic, partition and offset:
// a transaction's markers are appended concurrently, so their order across
// partitions is not defined.
func (b *fakeBackend) markerList() []marker {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]marker(nil), b.markers...)
	slices.SortStableFunc(out, func(x, y marker) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition), cmp.Compare(x.Offset, y.Offset))
	})
	return out
}

func (b *fakeBackend) commitList() []offsetCommit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]offsetCommit(nil), b.commits...)
}

func (b *fakeBackend) set(f func(b *fakeBackend)) {
	b.mu.Lock()
	f(b)
	b.mu.Unlock()
}

// clock is a settable clock.
type clock struct{ ms atomic.Int64 }

func (c *clock) Now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *clock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// env is a coordinator over fakes.
type env struct {
	c   *Coordinator
	be  *fakeBackend
	st  *memStore
	clk *clock
	cfg Config
}

const t0 = 1_700_000_000_000

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{be: newFakeBackend(), st: newMemStore(), clk: &clock{}}
	e.clk.ms.Store(t0)
	e.cfg = Config{MaxTimeout: time.Minute, IDExpiration: time.Hour, Now: e.clk.Now, Logger: slog.New(slog.DiscardHandler)}
	e.c = New(e.cfg, e.be, e.st)
	return e
}

// reopen returns a coordinator over the same store (and a fresh backend
// keeping the partitions' high watermarks), loaded, not yet recovered.
func (e *env) reopen(t testing.TB) *env {
	t.Helper()
	be := newFakeBackend()
	e.be.mu.Lock()
	be.hw = maps.Clone(e.be.hw)
	be.nextPID = e.be.nextPID
	e.be.mu.Unlock()
	n := &env{be: be, st: e.st, clk: e.clk, cfg: e.cfg}
	n.c = New(n.cfg, be, e.st)
	if err := n.c.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n
}

// stored decodes id's persisted state.
func (e *env) stored(t testing.TB, id string) (Txn, bool) {
	t.Helper()
	v, ok := e.st.get(NamespaceTxn, id)
	if !ok {
		return Txn{}, false
	}
	tx, err := Decode(id, v)
	if err != nil {
		t.Fatalf("stored %s: %v", id, err)
	}
	return tx, true
}

// describe returns id's state, failing the test when unknown.
func (e *env) describe(t testing.TB, id string) Txn {
	t.Helper()
	tx, ok := e.c.Describe(id)
	if !ok {
		t.Fatalf("%s unknown", id)
	}
	return tx
}

// waitBlocked waits until some goroutine's stack holds every one of
// frames (a goroutine parked on a lock inside a given method); it is how
// the tests know a request is waiting, without sleeping.
func waitBlocked(t testing.TB, frames ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !blockedIn(frames...) {
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine blocked in %v", frames)
		}
		runtime.Gosched()
	}
}

// waitChan is waitBlocked in the background: its channel closes once a
// goroutine is blocked in frames (never, after 10 s).
func waitChan(frames ...string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
			if blockedIn(frames...) {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// blockedIn reports whether a goroutine's stack holds every one of frames.
func blockedIn(frames ...string) bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// norm makes empty slices nil (Decode and clone differ there).
func norm(t Txn) Txn {
	t = t.clone()
	if len(t.Partitions) == 0 {
		t.Partitions = nil
	}
	if len(t.Groups) == 0 {
		t.Groups = nil
	}
	for i := range t.Groups {
		if len(t.Groups[i].Offsets) == 0 {
			t.Groups[i].Offsets = nil
		}
	}
	return t
}

// eqTxn compares two states, empty and nil slices alike.
func eqTxn(a, b Txn) bool { return reflect.DeepEqual(norm(a), norm(b)) }

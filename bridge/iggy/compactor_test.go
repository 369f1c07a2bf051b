package iggy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// generationsOf lists the topics of the system stream at addr whose names
// start with prefix, sorted.
func generationsOf(t *testing.T, addr, prefix string) []string {
	t.Helper()
	sys := open(t, Config{Addr: addr, Stream: DefaultSystemStream, PoolSize: 1, system: true})
	defer sys.Close()
	list, err := sys.Topics(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range list {
		if strings.HasPrefix(tp.Name, prefix) {
			out = append(out, tp.Name)
		}
	}
	slices.Sort(out)
	return out
}

// fourWriters runs write(w, i) for i 0..49 in each of four goroutines w
// and fails t on the first error.
func fourWriters(t *testing.T, write func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := write(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCommitLogCompactedAsItGrows: a lone gateway's commit log is compacted
// while it runs, not only at open: four writers commit their own offsets
// 50 times each, the compactor switching generations under them, and
// every last commit is there, in memory and for a client opened after.
func TestCommitLogCompactedAsItGrows(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	c := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 4})
	if _, err := c.CreateTopic(cx, "o", 4, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	fourWriters(t, func(w, i int) error {
		return c.CommitOffset(cx, "g", "o", int32(w), int64(i), fmt.Sprint(i))
	})
	want := c.snapshotOffsets()
	for w := range int32(4) {
		if got := want[offsetKey{"g", "o", w}]; got.offset != 49 || got.metadata != "49" {
			t.Fatalf("partition %d: last commit %+v, want 49", w, got)
		}
	}
	// The last commits may have kicked one more compaction: wait for the
	// compactor to finish it (it holds the generation lock meanwhile).
	var gens []string
	records := 0
	if !testtools.Eventually(10*time.Second, func() bool {
		gens = generationsOf(t, addr, commitTopicPrefix(stream))
		c.commits.mu.RLock()
		c.offMu.Lock()
		records = c.commits.records
		c.offMu.Unlock()
		c.commits.mu.RUnlock()
		return len(gens) == 1 && gens[0] != c.commitTopic(0) && !c.cfg.worthCompacting(records, len(want))
	}) {
		t.Fatalf("commit log generations after 200 commits of 4 offsets: %v with %d records for %d commits, want one, compacted", gens, records, len(want))
	}
	c.Close()
	c2 := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got := c2.snapshotOffsets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back after a restart: %v, want %v", got, want)
	}
}

// TestSystemStoreCompactedAsItGrows: a lone gateway's system store
// namespace is compacted while it runs: four writers put their own keys
// 50 times each, and every last value is there, through the writer and
// through a client opened after, in one generation past the first.
func TestSystemStoreCompactedAsItGrows(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	c := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 4})
	fourWriters(t, func(w, i int) error {
		return c.PutSystem(cx, "log-start", fmt.Sprint("t/", w), []byte{byte(i)})
	})
	want := map[string][]byte{"t/0": {49}, "t/1": {49}, "t/2": {49}, "t/3": {49}}
	if got, err := c.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Fatalf("read through the writer: %q %v, want %q", got, err, want)
	}
	prefix := stateTopicPrefix(stream, "log-start")
	var gens []string
	if !testtools.Eventually(10*time.Second, func() bool {
		gens = generationsOf(t, addr, prefix)
		st, unlock, err := c.lockNamespace(cx, "log-start")
		if err != nil {
			t.Fatal(err)
		}
		large := c.cfg.worthCompacting(st.records, len(st.entries))
		unlock()
		return len(gens) == 1 && gens[0] != prefix+"0" && !large
	}) {
		t.Fatalf("generations after 200 puts of 4 keys: %v, want one, compacted", gens)
	}
	c.Close()
	c2 := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got, err := c2.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Fatalf("read back after a restart: %q %v, want %q", got, err, want)
	}
}

// TestSystemStoreCompactedUnderConcurrentWriters: three instances of one
// cluster put their own keys into one namespace at once, each compacting it
// as it grows: a switch ends a generation while the others' writes are in
// flight, and a write that lands after it is written again into the next.
// Every key holds its last acknowledged value, through every instance and
// through a client opened after, and one generation is left.
func TestSystemStoreCompactedUnderConcurrentWriters(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	const instances, keys, puts = 3, 4, 60
	var cs []*Client
	for range instances {
		cs = append(cs, open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 2, CommitTail: time.Hour}))
	}
	var mu sync.Mutex
	acked := map[string]byte{}
	var wg sync.WaitGroup
	errs := make(chan error, instances*keys)
	for i, c := range cs {
		for k := range keys {
			wg.Go(func() {
				key := fmt.Sprintf("i%d/k%d", i, k)
				for v := range puts {
					if err := c.PutSystem(cx, "acl", key, []byte{byte(v)}); err != nil {
						errs <- fmt.Errorf("%s = %d: %w", key, v, err)
						return
					}
					mu.Lock()
					acked[key] = byte(v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for k, v := range acked {
		want[k] = []byte{v}
	}
	prefix := stateTopicPrefix(stream, "acl")
	var gens []string
	if !testtools.Eventually(20*time.Second, func() bool {
		gens = generationsOf(t, addr, prefix)
		return len(gens) == 1 && gens[0] != prefix+"0"
	}) {
		t.Errorf("generations after %d puts: %v, want one, compacted", instances*keys*puts, gens)
	}
	for i, c := range cs {
		if got, err := c.LoadSystem(cx, "acl"); err != nil || !equalState(got, want) {
			t.Errorf("instance %d reads %q %v, want %q", i, got, err, want)
		}
	}
	fresh := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got, err := fresh.LoadSystem(cx, "acl"); err != nil || !equalState(got, want) {
		t.Errorf("a client opened after reads %q %v, want %q", got, err, want)
	}
}

// TestSystemStoreCopyTakeover: an instance switched a generation, created
// the next and died before its copy was complete (the test writes what it
// left). A write through another instance waits for the copy, gives it up
// (switching the unfinished generation too), copies into the one after and
// lands there; an instance still on the switched generation reads it as of
// the switch, then follows; nothing written before the switch is lost.
func TestSystemStoreCopyTakeover(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	want := map[string][]byte{}
	for i := range 5 {
		k := fmt.Sprint("t/", i)
		want[k] = []byte{byte(i)}
		if err := a.PutSystem(cx, "log-start", k, want[k]); err != nil {
			t.Fatal(err)
		}
	}
	// The dead copier's work: a switch in generation 0, generation 1
	// created with one entry of its copy and no "complete".
	prefix := stateTopicPrefix(stream, "log-start")
	if err := a.appendStateMark(cx, prefix+"0", stateSwitch); err != nil {
		t.Fatal(err)
	}
	if _, err := a.commits.sys.CreateTopic(cx, prefix+"1", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	var b0 message.Batch
	b0.Reset(uint64(time.Now().UnixMicro()))
	addStateRecord(&b0, stateRecord{kind: statePut, key: "t/0", value: []byte{0}})
	if _, err := a.commits.sys.Append(cx, prefix+"1", 0, &b0); err != nil {
		t.Fatal(err)
	}
	// a, reading, sees the namespace as of the switch.
	if got, err := a.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Fatalf("a reads %q %v during the copy, want %q", got, err, want)
	}
	b := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true, stateTakeover: 300 * time.Millisecond})
	if err := b.PutSystem(cx, "log-start", "t/b", []byte{9}); err != nil {
		t.Fatal(err)
	}
	want["t/b"] = []byte{9}
	if got := generationsOf(t, addr, prefix); !slices.Equal(got, []string{prefix + "2"}) {
		t.Errorf("generations after the takeover: %v, want %s2 alone", got, prefix)
	}
	for name, c := range map[string]*Client{"a": a, "b": b} {
		if got, err := c.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
			t.Errorf("%s reads %q %v after the takeover, want %q", name, got, err, want)
		}
	}
	// a writes on, into generation 2.
	if err := a.PutSystem(cx, "log-start", "t/a", []byte{8}); err != nil {
		t.Fatal(err)
	}
	want["t/a"] = []byte{8}
	fresh := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got, err := fresh.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Errorf("a client opened after reads %q %v, want %q", got, err, want)
	}
}

// TestSystemStoreWriteAfterSwitch: another instance's switch lands between
// a write's catch-up and its append. The write counts for nothing there:
// it is appended again into the next generation (which the writer copies
// into, the switcher having left it) before PutSystem returns, and reads
// back through a client opened after.
func TestSystemStoreWriteAfterSwitch(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	prefix := stateTopicPrefix(stream, "log-start")
	other := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	switched := false
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true, beforeStateAppend: func(topic string) {
		if !switched && topic == prefix+"0" {
			switched = true
			if err := other.appendStateMark(cx, topic, stateSwitch); err != nil {
				t.Error(err)
			}
		}
	}})
	if err := other.PutSystem(cx, "log-start", "t/0", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.LoadSystem(cx, "log-start"); err != nil || !equalState(got, map[string][]byte{"t/0": {1}}) {
		t.Fatalf("a reads %q %v", got, err)
	}
	if err := a.PutSystem(cx, "log-start", "t/1", []byte{2}); err != nil {
		t.Fatal(err)
	}
	if !switched || a.stateRewrites.Load() != 1 {
		t.Fatalf("switched %v, writes appended again %d, want 1", switched, a.stateRewrites.Load())
	}
	if got := generationsOf(t, addr, prefix); !slices.Equal(got, []string{prefix + "1"}) {
		t.Errorf("generations: %v, want %s1 alone", got, prefix)
	}
	want := map[string][]byte{"t/0": {1}, "t/1": {2}}
	for name, c := range map[string]*Client{"a": a, "other": other} {
		if got, err := c.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
			t.Errorf("%s reads %q %v, want %q", name, got, err, want)
		}
	}
	fresh := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got, err := fresh.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Errorf("a client opened after reads %q %v, want %q", got, err, want)
	}
}

// TestCommitLogSharedNotCompactedWhileRunning: two instances commit into
// one commit log without reading its tail (no --cluster-membership), so
// neither would see the other's switch. The compactor of the one whose log
// grows finds the other's records there and leaves the log alone: every
// commit of both reads back through a client opened after.
func TestCommitLogSharedNotCompactedWhileRunning(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	a := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 2})
	b := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 2})
	if _, err := a.CreateTopic(cx, "o", 2, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := b.CommitOffset(cx, "gb", "o", 1, 7, "b"); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := a.CommitOffset(cx, "ga", "o", 0, int64(i), "a"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the compactor had its chance
	if got := generationsOf(t, addr, commitTopicPrefix(stream)); !slices.Equal(got, []string{a.commitTopic(0)}) {
		t.Errorf("generations: %v, want %s alone", got, a.commitTopic(0))
	}
	a.Close()
	b.Close()
	fresh := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	got := fresh.snapshotOffsets()
	if o := got[offsetKey{"ga", "o", 0}]; o.offset != 59 {
		t.Errorf("ga's commit %+v, want 59", o)
	}
	if o := got[offsetKey{"gb", "o", 1}]; o.offset != 7 {
		t.Errorf("gb's commit %+v, want 7", o)
	}
}

// TestSystemStoreSkipsDeletedGenerations: generation 0 switched, 1 gone
// (dropped incomplete by an earlier version's open) and 2 a copy under way
// that never completes: a reader reads the namespace as of generation 0's
// switch (it does not loop reopening it), and a writer gives generation 2
// up and copies generation 0's state into 3, where its write lands.
func TestSystemStoreSkipsDeletedGenerations(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	prefix := stateTopicPrefix(stream, "log-start")
	setup := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	want := map[string][]byte{"t/0": {1}, "t/1": {2}}
	for k, v := range want {
		if err := setup.PutSystem(cx, "log-start", k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := setup.appendStateMark(cx, prefix+"0", stateSwitch); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.commits.sys.CreateTopic(cx, prefix+"2", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	reader := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if got, err := reader.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Fatalf("a reader reads %q %v, want %q", got, err, want)
	}
	writer := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true, stateTakeover: 200 * time.Millisecond})
	if err := writer.PutSystem(cx, "log-start", "t/2", []byte{3}); err != nil {
		t.Fatal(err)
	}
	want["t/2"] = []byte{3}
	if got := generationsOf(t, addr, prefix); !slices.Equal(got, []string{prefix + "3"}) {
		t.Errorf("generations: %v, want %s3 alone", got, prefix)
	}
	for name, c := range map[string]*Client{"reader": reader, "writer": writer} {
		if got, err := c.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
			t.Errorf("%s reads %q %v, want %q", name, got, err, want)
		}
	}
}

package iggy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	var gens []string
	if !testtools.Eventually(10*time.Second, func() bool {
		gens = generationsOf(t, addr, commitTopicPrefix(stream))
		return len(gens) == 1 && gens[0] != c.commitTopic(0)
	}) {
		t.Fatalf("commit log generations after 200 commits of 4 offsets: %v, want one, compacted", gens)
	}
	c.offMu.Lock()
	records := c.commits.records
	c.offMu.Unlock()
	if c.cfg.worthCompacting(records, len(want)) {
		t.Errorf("%d records in the current generation for %d commits", records, len(want))
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
		c.state.mu.Lock()
		st := c.state.ns["log-start"]
		large := c.cfg.worthCompacting(st.records, len(st.entries))
		c.state.mu.Unlock()
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

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

//go:build !race

package fetchsession

import (
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// TestIncrementalAllocs: an incremental Fetch of a session's cached
// partitions, checked, rewritten and committed, allocates nothing.
func TestIncrementalAllocs(t *testing.T) {
	c := New(10, DefaultMaxPartitions, DefaultMinEviction)
	now := time.Unix(1000, 0)
	names := make([]any, 0, 200)
	for i := range 100 {
		names = append(names, "t", i)
	}
	id := c.Create(now, fullReq(names...), false, false, outcomes(100, 0))
	req := fullReq("t", 3)
	req.SessionID = id
	var prev []Sent
	out := outcomes(100, 0)
	epoch := int32(1)
	step := func() {
		req.SessionEpoch = epoch
		req.Topics = req.Topics[:1]
		req.Topics[0].Topic = "t"
		req.Topics[0].Partitions = req.Topics[0].Partitions[:1]
		tk, p, code := c.Incremental(now, req, false, prev)
		prev = p
		if code != wire.NoError || !tk.Commit(out) {
			t.Fatal("incremental failed")
		}
		epoch = tk.Epoch
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%v allocations per incremental Fetch", n)
	}
}

package txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// TestMaxIDs: past Config.MaxIDs a new transactional id is refused with
// COORDINATOR_NOT_AVAILABLE and nothing is stored for it, while the ids
// held keep working (a new epoch, a transaction); once an id expires there
// is room again.
func TestMaxIDs(t *testing.T) {
	e := newEnv(t)
	e.cfg.MaxIDs = 3
	e.c = New(e.cfg, e.be, e.st)
	for i := range 3 {
		e.init(t, fmt.Sprintf("id-%d", i))
	}
	if _, _, code := e.c.InitProducerID(ctx, "id-new", 10_000, -1, -1, vNew); code != wire.CoordinatorNotAvailable {
		t.Fatalf("a fourth id: %v, want COORDINATOR_NOT_AVAILABLE", code)
	}
	if n, r := e.c.IDs(), e.c.Stats.Refused.Load(); n != 3 || r != 1 {
		t.Fatalf("%d ids held, %d refused; want 3 and 1", n, r)
	}
	if _, ok := e.c.Describe("id-new"); ok {
		t.Fatal("the refused id is known")
	}
	pid, epoch := e.init(t, "id-0") // a held id bumps its epoch
	if epoch != 1 {
		t.Fatalf("id-0 epoch %d after a second InitProducerId, want 1", epoch)
	}
	e.add(t, "id-0", pid, epoch, parts("t/0")...)
	e.end(t, "id-0", pid, epoch, true)
	// id-1 and id-2 expire (an hour without a transaction); id-0 is fresh.
	e.clk.ms.Add((59 * time.Minute).Milliseconds())
	e.init(t, "id-0")
	e.clk.ms.Add((2 * time.Minute).Milliseconds())
	e.c.Tick(ctx)
	if n := e.c.IDs(); n != 1 {
		t.Fatalf("%d ids held after expiry, want 1", n)
	}
	e.init(t, "id-new")
}

package txn

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

var ctx = context.Background()

// The request versions the tests use: the newest (PRODUCER_FENCED) and
// the oldest that answer INVALID_PRODUCER_EPOCH instead.
const (
	vNew     = 5
	vInitOld = 3 // InitProducerId: PRODUCER_FENCED from v4
	vOld     = 1 // AddPartitionsToTxn, AddOffsetsToTxn, EndTxn: from v2
)

func (e *env) init(t testing.TB, id string) (int64, int16) {
	t.Helper()
	pid, epoch, code := e.c.InitProducerID(ctx, id, 10_000, -1, -1, vNew)
	if code != wire.NoError {
		t.Fatalf("InitProducerID(%s): %v", id, code)
	}
	return pid, epoch
}

func (e *env) add(t testing.TB, id string, pid int64, epoch int16, parts ...Partition) {
	t.Helper()
	if code := e.c.AddPartitions(ctx, id, pid, epoch, parts, vNew); code != wire.NoError {
		t.Fatalf("AddPartitions(%s): %v", id, code)
	}
}

func (e *env) end(t testing.TB, id string, pid int64, epoch int16, commit bool) {
	t.Helper()
	if code := e.c.End(ctx, id, pid, epoch, commit, vNew); code != wire.NoError {
		t.Fatalf("End(%s, %v): %v", id, commit, code)
	}
}

func parts(specs ...string) []Partition {
	var out []Partition
	for _, s := range specs {
		var p Partition
		i := strings.LastIndexByte(s, '/')
		p.Topic = s[:i]
		fmt.Sscan(s[i+1:], &p.Partition)
		out = append(out, p)
	}
	return out
}

// ---- InitProducerId ----

func TestInitProducerIDNewAndBump(t *testing.T) {
	e := newEnv(t)
	pid, epoch, code := e.c.InitProducerID(ctx, "a", 5000, -1, -1, vNew)
	if code != wire.NoError || pid != 1000 || epoch != 0 {
		t.Fatalf("new id: %d %d %v", pid, epoch, code)
	}
	want := Txn{ID: "a", ProducerID: 1000, Epoch: 0, LastEpoch: -1, TimeoutMs: 5000, State: Empty, UpdateMs: t0}
	if got := e.describe(t, "a"); !eqTxn(got, want) {
		t.Fatalf("Describe = %+v, want %+v", got, want)
	}
	if got, _ := e.stored(t, "a"); !eqTxn(got, want) {
		t.Fatalf("stored %+v", got)
	}
	e.clk.add(time.Second)
	for i := 1; i <= 3; i++ {
		pid2, epoch2, code := e.c.InitProducerID(ctx, "a", 7000, -1, -1, vNew)
		if code != wire.NoError || pid2 != pid || epoch2 != int16(i) {
			t.Fatalf("bump %d: %d %d %v", i, pid2, epoch2, code)
		}
	}
	got := e.describe(t, "a")
	if got.TimeoutMs != 7000 || got.Epoch != 3 || got.LastEpoch != 2 || got.UpdateMs != t0+1000 {
		t.Fatalf("after bumps %+v", got)
	}
	// Another id gets another producer id.
	if pid3, _ := e.init(t, "b"); pid3 == pid {
		t.Fatal("two ids share a producer id")
	}
	if l := e.c.List(); len(l) != 2 {
		t.Fatalf("List = %d", len(l))
	}
}

func TestInitProducerIDTimeout(t *testing.T) {
	e := newEnv(t) // MaxTimeout 1 minute
	for _, c := range []struct {
		ms   int32
		want wire.ErrorCode
	}{
		{0, wire.InvalidTransactionTimeout},
		{-1, wire.InvalidTransactionTimeout},
		{math.MinInt32, wire.InvalidTransactionTimeout},
		{60_001, wire.InvalidTransactionTimeout},
		{math.MaxInt32, wire.InvalidTransactionTimeout},
		{1, wire.NoError},
		{60_000, wire.NoError}, // equal to the maximum
	} {
		pid, epoch, code := e.c.InitProducerID(ctx, "a", c.ms, -1, -1, vNew)
		if code != c.want || code != wire.NoError && (pid != -1 || epoch != -1) {
			t.Errorf("timeout %d: %d %d %v, want %v", c.ms, pid, epoch, code, c.want)
		}
	}
	// The default maximum is Kafka's 900 s.
	d := New(Config{}, newFakeBackend(), newMemStore())
	if _, _, code := d.InitProducerID(ctx, "a", 900_000, -1, -1, vNew); code != wire.NoError {
		t.Fatalf("900 s: %v", code)
	}
	if _, _, code := d.InitProducerID(ctx, "a", 900_001, -1, -1, vNew); code != wire.InvalidTransactionTimeout {
		t.Fatalf("900.001 s: %v", code)
	}
}

func TestInitProducerIDExpected(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init(t, "a")
	e.init(t, "a")
	_, epoch := e.init(t, "a") // epoch 2, last epoch 1
	const fenced, same, bumped = 0, 1, 2
	cases := []struct {
		name    string
		pid     int64
		epoch   int16
		v       int16
		want    wire.ErrorCode
		outcome int
	}{
		{"wrong-epoch-v4", pid, epoch - 2, 4, wire.ProducerFenced, fenced},
		{"wrong-epoch-v3", pid, epoch - 2, vInitOld, wire.InvalidProducerEpoch, fenced},
		{"future-epoch-v5", pid, epoch + 1, 5, wire.ProducerFenced, fenced},
		{"wrong-pid-v4", pid + 1, epoch, 4, wire.ProducerFenced, fenced},
		{"wrong-pid-v3", pid + 1, epoch, vInitOld, wire.InvalidProducerEpoch, fenced},
		// Kafka's prepareIncrementProducerEpoch: the last epoch is the
		// retry of the bump just made, answered the current epoch.
		{"retry-of-bump", pid, epoch - 1, 4, wire.NoError, same},
		{"match", pid, epoch, 4, wire.NoError, bumped},
	}
	for _, c := range cases {
		before := e.describe(t, "a")
		gotPID, gotEpoch, code := e.c.InitProducerID(ctx, "a", 10_000, c.pid, c.epoch, c.v)
		if code != c.want {
			t.Fatalf("%s: %v, want %v", c.name, code, c.want)
		}
		after := e.describe(t, "a")
		switch c.outcome {
		case bumped:
			if gotPID != pid || gotEpoch != before.Epoch+1 || after.Epoch != gotEpoch || after.LastEpoch != before.Epoch {
				t.Fatalf("%s: %d %d, state %+v", c.name, gotPID, gotEpoch, after)
			}
		case same:
			if gotPID != pid || gotEpoch != before.Epoch || !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: %d %d, state %+v", c.name, gotPID, gotEpoch, after)
			}
		default:
			if gotPID != -1 || gotEpoch != -1 || !reflect.DeepEqual(before, after) {
				t.Fatalf("%s: %d %d, state changed %+v", c.name, gotPID, gotEpoch, after)
			}
		}
	}
	// Once a transaction began, the last epoch is no retry.
	e.add(t, "a", pid, epoch+1, parts("t/0")...)
	if _, _, code := e.c.InitProducerID(ctx, "a", 10_000, pid, epoch, 4); code != wire.ProducerFenced {
		t.Fatalf("last epoch after a transaction began: %v", code)
	}
	// An unknown id with an expected producer: a new one (Kafka: the
	// metadata was just created).
	if p, ep, code := e.c.InitProducerID(ctx, "new", 10_000, 5, 3, 4); code != wire.NoError || p < 0 || ep != 0 {
		t.Fatalf("new id with expected pid: %d %d %v", p, ep, code)
	}
}

func TestInitProducerIDAbortsOngoing(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.be.setHW("t", 0, 10)
	e.be.setHW("t", 1, 20)
	e.add(t, "a", pid, epoch, parts("t/0", "t/1")...)
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Partition: 0, Offset: 5}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.be.produce("t", 0, 3) // records 10–12
	pid2, epoch2, code := e.c.InitProducerID(ctx, "a", 10_000, -1, -1, vNew)
	if code != wire.NoError || pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("InitProducerID: %d %d %v, want %d %d", pid2, epoch2, code, pid, epoch+2)
	}
	// Abort markers at the fencing epoch on both partitions.
	want := []marker{
		{"t", 0, 13, mapping.Control{ProducerID: pid, ProducerEpoch: epoch + 1}},
		{"t", 1, 20, mapping.Control{ProducerID: pid, ProducerEpoch: epoch + 1}},
	}
	if got := e.be.markerList(); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if len(e.be.commitList()) != 0 {
		t.Fatal("an aborted transaction committed offsets")
	}
	if got := e.c.Index.AbortedList("t", 0); !reflect.DeepEqual(got, []Aborted{{pid, 10, 13}}) {
		t.Fatalf("aborted t/0: %v", got)
	}
	if e.c.Index.LastStable("t", 0, 14) != 14 || e.c.PendingOffset("g", "t", 0) {
		t.Fatal("the aborted transaction is still open")
	}
	tx := e.describe(t, "a")
	if tx.State != Empty || len(tx.Partitions) != 0 || len(tx.Groups) != 0 {
		t.Fatalf("after %+v", tx)
	}
	// The old producer is fenced.
	if code := e.c.AddPartitions(ctx, "a", pid, epoch, parts("t/0"), vNew); code != wire.ProducerFenced {
		t.Fatalf("old producer: %v", code)
	}
}

func TestInitProducerIDEpochExhausted(t *testing.T) {
	e := newEnv(t)
	old := Txn{ID: "a", ProducerID: 7, Epoch: math.MaxInt16 - 1, TimeoutMs: 1000, State: CompleteCommit, UpdateMs: t0}
	if err := e.st.PutSystem(ctx, NamespaceTxn, "a", old.Encode()); err != nil {
		t.Fatal(err)
	}
	e = e.reopen(t)
	pid, epoch, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew)
	if code != wire.NoError || pid == 7 || pid < 0 || epoch != 0 {
		t.Fatalf("exhausted: %d %d %v", pid, epoch, code)
	}
	if _, code := e.c.CheckProduce(7, math.MaxInt16-1, "t", 0); code != wire.InvalidProducerIDMapping {
		t.Fatalf("old producer id still mapped: %v", code)
	}
	e.add(t, "a", pid, 0, parts("t/0")...)
	if p, code := e.c.CheckProduce(pid, 0, "t", 0); code != wire.NoError {
		t.Fatalf("new producer id: %v", code)
	} else {
		p.Done()
	}
	// One below: an ordinary bump to the last usable epoch.
	old.ID, old.ProducerID, old.Epoch = "b", 8, math.MaxInt16-2
	if err := e.st.PutSystem(ctx, NamespaceTxn, "b", old.Encode()); err != nil {
		t.Fatal(err)
	}
	e = e.reopen(t)
	if pid, epoch, code := e.c.InitProducerID(ctx, "b", 1000, -1, -1, vNew); code != wire.NoError || pid != 8 || epoch != math.MaxInt16-1 {
		t.Fatalf("last epoch: %d %d %v", pid, epoch, code)
	}
}

// TestFenceAtLastEpoch: a transaction at the last usable epoch (32766)
// that times out must still fence its producer, as Kafka's
// prepareFenceProducerEpoch does (it bumps to 32767).
func TestFenceAtLastEpoch(t *testing.T) {
	e := newEnv(t)
	tx := Txn{ID: "a", ProducerID: 7, Epoch: math.MaxInt16 - 1, TimeoutMs: 1000, State: Ongoing, StartMs: t0, UpdateMs: t0,
		Partitions: []Partition{{Topic: "t", Partition: 0, First: 0}}}
	if err := e.st.PutSystem(ctx, NamespaceTxn, "a", tx.Encode()); err != nil {
		t.Fatal(err)
	}
	e = e.reopen(t)
	e.clk.add(2 * time.Second)
	e.c.Tick(ctx)
	got := e.describe(t, "a")
	if got.State != CompleteAbort {
		t.Fatalf("state %v", got.State)
	}
	if m := e.be.markerList(); len(m) != 1 || m[0].C.ProducerEpoch != math.MaxInt16 {
		t.Errorf("abort marker %+v, want epoch %d", m, math.MaxInt16)
	}
	if code := e.c.AddPartitions(ctx, "a", 7, math.MaxInt16-1, parts("t/0"), vNew); code != wire.ProducerFenced {
		t.Errorf("the timed-out producer was not fenced: AddPartitions %v", code)
	}
	// Its next InitProducerId rotates the producer id.
	if pid, epoch, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew); code != wire.NoError || pid == 7 || epoch != 0 {
		t.Errorf("after the fence: %d %d %v", pid, epoch, code)
	}
}

func TestInitProducerIDNoIDs(t *testing.T) {
	e := newEnv(t)
	e.be.set(func(b *fakeBackend) { b.noPIDs = true })
	if pid, epoch, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew); code != wire.UnknownServerError || pid != -1 || epoch != -1 {
		t.Fatalf("%d %d %v", pid, epoch, code)
	}
	if _, ok := e.c.Describe("a"); ok || e.st.putCount() != 0 {
		t.Fatal("state kept")
	}
}

func TestInitProducerIDCompletesPrepared(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	e.be.set(func(b *fakeBackend) { b.markerErr = func(string, int32) error { return store.ErrUnavailable } })
	e.end(t, "a", pid, epoch, true)
	if s := e.describe(t, "a").State; s != PrepareCommit {
		t.Fatalf("state %v", s)
	}
	// Still failing: CONCURRENT_TRANSACTIONS, unchanged.
	if _, _, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew); code != wire.ConcurrentTransactions {
		t.Fatalf("markers failing: %v", code)
	}
	e.be.set(func(b *fakeBackend) { b.markerErr = nil })
	pid2, epoch2, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew)
	if code != wire.NoError || pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("%d %d %v", pid2, epoch2, code)
	}
	if m := e.be.markerList(); len(m) != 1 || !m[0].C.Commit || m[0].C.ProducerEpoch != epoch {
		t.Fatalf("markers %+v", m)
	}
}

// ---- AddPartitionsToTxn, AddOffsetsToTxn ----

func TestAddPartitionsChecks(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init(t, "a")
	_, epoch := e.init(t, "a") // 1
	cases := []struct {
		name  string
		id    string
		pid   int64
		epoch int16
		v     int16
		want  wire.ErrorCode
	}{
		{"unknown-id", "nope", pid, epoch, vNew, wire.InvalidProducerIDMapping},
		{"wrong-pid", "a", pid + 1, epoch, vNew, wire.InvalidProducerIDMapping},
		{"stale-epoch-v2", "a", pid, epoch - 1, 2, wire.ProducerFenced},
		{"stale-epoch-v1", "a", pid, epoch - 1, vOld, wire.InvalidProducerEpoch},
		{"future-epoch", "a", pid, epoch + 1, vNew, wire.ProducerFenced},
	}
	for _, c := range cases {
		if code := e.c.AddPartitions(ctx, c.id, c.pid, c.epoch, parts("t/0"), c.v); code != c.want {
			t.Errorf("AddPartitions %s: %v, want %v", c.name, code, c.want)
		}
		if code := e.c.AddOffsets(ctx, c.id, c.pid, c.epoch, "g", c.v); code != c.want {
			t.Errorf("AddOffsets %s: %v, want %v", c.name, code, c.want)
		}
		if code := e.c.End(ctx, c.id, c.pid, c.epoch, true, c.v); code != c.want {
			t.Errorf("End %s: %v, want %v", c.name, code, c.want)
		}
	}
	if s := e.describe(t, "a"); s.State != Empty {
		t.Fatalf("state changed: %+v", s)
	}
}

func TestAddPartitionsFirstOffsetAndRetry(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.be.setHW("t", 0, 100)
	e.be.setHW("u", 3, 7)
	e.clk.add(time.Second)
	e.add(t, "a", pid, epoch, parts("t/0", "u/3")...)
	tx := e.describe(t, "a")
	want := []Partition{{"t", 0, 100}, {"u", 3, 7}}
	if tx.State != Ongoing || !reflect.DeepEqual(tx.Partitions, want) || tx.StartMs != t0+1000 {
		t.Fatalf("after add: %+v", tx)
	}
	if e.c.Index.LastStable("t", 0, 200) != 100 || e.c.Index.LastStable("u", 3, 200) != 7 {
		t.Fatal("index not opened at the high watermarks")
	}
	// A retry changes nothing and writes nothing.
	e.be.produce("t", 0, 5)
	puts := e.st.putCount()
	e.clk.add(time.Second)
	e.add(t, "a", pid, epoch, parts("t/0", "u/3")...)
	if e.st.putCount() != puts {
		t.Fatal("a retry was persisted")
	}
	if got := e.describe(t, "a"); !eqTxn(got, tx) {
		t.Fatalf("a retry changed %+v", got)
	}
	// A new partition with some already there: only it is added; the
	// others keep their first offsets; the start time stays.
	e.be.setHW("t", 1, 50)
	e.add(t, "a", pid, epoch, parts("t/0", "t/1")...)
	tx = e.describe(t, "a")
	want = append(want, Partition{"t", 1, 50})
	if !reflect.DeepEqual(tx.Partitions, want) || tx.StartMs != t0+1000 {
		t.Fatalf("after a second add: %+v", tx)
	}
	if got, _ := e.stored(t, "a"); !eqTxn(got, tx) {
		t.Fatalf("stored %+v", got)
	}
	// Duplicates within one request are added once.
	pid2, epoch2 := e.init(t, "b")
	e.add(t, "b", pid2, epoch2, parts("x/0", "x/0")...)
	if got := e.describe(t, "b").Partitions; len(got) != 1 {
		t.Fatalf("duplicate partitions %v", got)
	}
}

func TestAddPartitionsHighWatermarkError(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	for _, c := range []struct {
		err  error
		want wire.ErrorCode
	}{
		{store.ErrUnavailable, wire.CoordinatorNotAvailable},
		{store.ErrUnknownTopic, wire.UnknownTopicOrPartition},
		{fmt.Errorf("wrapped: %w", store.ErrUnknownPartition), wire.UnknownTopicOrPartition},
	} {
		e.be.set(func(b *fakeBackend) {
			b.hwErr = func(topic string, _ int32) error {
				if topic == "bad" {
					return c.err
				}
				return nil
			}
		})
		before := e.describe(t, "a")
		if code := e.c.AddPartitions(ctx, "a", pid, epoch, parts("t/0", "bad/0"), vNew); code != c.want {
			t.Fatalf("%v: %v, want %v", c.err, code, c.want)
		}
		if got := e.describe(t, "a"); !reflect.DeepEqual(got, before) {
			t.Fatalf("state changed: %+v", got)
		}
		if e.c.Index.LastStable("t", 0, 99) != 99 {
			t.Fatal("index opened")
		}
	}
}

func TestAddDuringPrepare(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	e.be.set(func(b *fakeBackend) { b.markerErr = func(string, int32) error { return store.ErrUnavailable } })
	e.end(t, "a", pid, epoch, false)
	if s := e.describe(t, "a").State; s != PrepareAbort {
		t.Fatalf("state %v", s)
	}
	if code := e.c.AddPartitions(ctx, "a", pid, epoch, parts("t/1"), vNew); code != wire.ConcurrentTransactions {
		t.Errorf("AddPartitions: %v", code)
	}
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.ConcurrentTransactions {
		t.Errorf("AddOffsets: %v", code)
	}
	if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t"}}); code != wire.InvalidTxnState {
		t.Errorf("CommitOffsets: %v", code)
	}
	// EndTxn: the same outcome again retries the markers (still failing:
	// CONCURRENT_TRANSACTIONS); the other is INVALID_TXN_STATE (Kafka's
	// endTransaction: PrepareAbort with COMMIT).
	if code := e.c.End(ctx, "a", pid, epoch, false, vNew); code != wire.ConcurrentTransactions {
		t.Errorf("End(abort) in PrepareAbort, markers failing: %v", code)
	}
	if code := e.c.End(ctx, "a", pid, epoch, true, vNew); code != wire.InvalidTxnState {
		t.Errorf("End(commit) in PrepareAbort: %v, want INVALID_TXN_STATE", code)
	}
	if s := e.describe(t, "a").State; s != PrepareAbort {
		t.Fatalf("state %v", s)
	}
}

func TestAddOffsets(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.clk.add(time.Second)
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g1", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g1", vNew); code != wire.NoError { // retry
		t.Fatal(code)
	}
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g2", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	tx := e.describe(t, "a")
	if tx.State != Ongoing || tx.StartMs != t0+1000 || len(tx.Groups) != 2 || tx.Groups[0].Group != "g1" || tx.Groups[1].Group != "g2" {
		t.Fatalf("%+v", tx)
	}
	if got, _ := e.stored(t, "a"); !eqTxn(got, tx) {
		t.Fatalf("stored %+v", got)
	}
	// A transaction with only offsets commits them and writes no marker.
	if code := e.c.CommitOffsets(ctx, "a", "g1", pid, epoch, []Offset{{Topic: "t", Partition: 0, Offset: 9}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.end(t, "a", pid, epoch, true)
	if len(e.be.markerList()) != 0 {
		t.Fatal("markers without partitions")
	}
	// g2 had no offsets: not committed.
	if c := e.be.commitList(); len(c) != 1 || c[0].Group != "g1" {
		t.Fatalf("commits %+v", c)
	}
}

// ---- TxnOffsetCommit ----

func TestCommitOffsetsPending(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprint("commit=", commit), func(t *testing.T) {
			e := newEnv(t)
			pid, epoch := e.init(t, "a")
			if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t"}}); code != wire.InvalidTxnState {
				t.Fatalf("Empty: %v", code)
			}
			if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
				t.Fatal(code)
			}
			for _, c := range []struct {
				pid   int64
				epoch int16
				want  wire.ErrorCode
			}{
				{pid + 1, epoch, wire.InvalidProducerIDMapping},
				{pid, epoch + 1, wire.InvalidProducerEpoch},
				{pid, epoch - 1, wire.InvalidProducerEpoch},
			} {
				if code := e.c.CommitOffsets(ctx, "a", "g", c.pid, c.epoch, []Offset{{Topic: "t"}}); code != c.want {
					t.Fatalf("%d/%d: %v, want %v", c.pid, c.epoch, code, c.want)
				}
			}
			if code := e.c.CommitOffsets(ctx, "nope", "g", pid, epoch, []Offset{{Topic: "t"}}); code != wire.InvalidProducerIDMapping {
				t.Fatalf("unknown id: %v", code)
			}
			offs := []Offset{{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 2, Metadata: "m"}, {Topic: "t", Partition: 1, Offset: 6}}
			if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, offs); code != wire.NoError {
				t.Fatal(code)
			}
			// The same partition again replaces its offset; another group.
			if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Partition: 0, Offset: 8}}); code != wire.NoError {
				t.Fatal(code)
			}
			if code := e.c.CommitOffsets(ctx, "a", "h", pid, epoch, []Offset{{Topic: "u", Partition: 0, Offset: 1}}); code != wire.NoError {
				t.Fatal(code)
			}
			for _, k := range []pendingKey{{"g", "t", 0}, {"g", "t", 1}, {"h", "u", 0}} {
				if !e.c.PendingOffset(k.group, k.topic, k.partition) {
					t.Fatalf("%v not pending", k)
				}
			}
			if e.c.PendingOffset("g", "t", 2) || e.c.PendingOffset("h", "t", 0) {
				t.Fatal("pending where none is")
			}
			tx := e.describe(t, "a")
			wantG := []Offset{{Topic: "t", Partition: 0, Offset: 8}, {Topic: "t", Partition: 1, Offset: 6}}
			if !reflect.DeepEqual(tx.Groups[0].Offsets, wantG) {
				t.Fatalf("offsets %+v", tx.Groups[0].Offsets)
			}
			e.end(t, "a", pid, epoch, commit)
			for _, k := range []pendingKey{{"g", "t", 0}, {"g", "t", 1}, {"h", "u", 0}} {
				if e.c.PendingOffset(k.group, k.topic, k.partition) {
					t.Fatalf("%v pending after End", k)
				}
			}
			cs := e.be.commitList()
			if !commit {
				if len(cs) != 0 {
					t.Fatalf("an abort committed %+v", cs)
				}
				return
			}
			want := []offsetCommit{{"g", wantG}, {"h", []Offset{{Topic: "u", Partition: 0, Offset: 1}}}}
			if !reflect.DeepEqual(cs, want) {
				t.Fatalf("commits %+v, want %+v", cs, want)
			}
		})
	}
}

// ---- EndTxn ----

func TestEndCommit(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.be.setHW("t", 0, 10)
	e.be.setHW("t", 1, 20)
	e.add(t, "a", pid, epoch, parts("t/0", "t/1")...)
	e.be.produce("t", 0, 2)
	e.be.produce("t", 1, 1)
	if e.c.Index.LastStable("t", 0, 12) != 10 {
		t.Fatal("last stable")
	}
	e.clk.add(time.Second)
	e.end(t, "a", pid, epoch, true)
	want := []marker{
		{"t", 0, 12, mapping.Control{ProducerID: pid, ProducerEpoch: epoch, Commit: true}},
		{"t", 1, 21, mapping.Control{ProducerID: pid, ProducerEpoch: epoch, Commit: true}},
	}
	if got := e.be.markerList(); !reflect.DeepEqual(got, want) {
		t.Fatalf("markers %+v", got)
	}
	if e.c.Index.LastStable("t", 0, 13) != 13 || e.c.Index.LastStable("t", 1, 22) != 22 {
		t.Fatal("still open")
	}
	if len(e.c.Index.AbortedList("t", 0)) != 0 {
		t.Fatal("a commit in the aborted index")
	}
	if _, ok := e.st.get(NamespaceAborted, "t/0"); ok {
		t.Fatal("aborted index persisted for a commit")
	}
	tx := e.describe(t, "a")
	if tx.State != CompleteCommit || tx.UpdateMs != t0+1000 {
		t.Fatalf("%+v", tx)
	}
	if got, _ := e.stored(t, "a"); !eqTxn(got, tx) {
		t.Fatalf("stored %+v", got)
	}
	// Retries of the answered EndTxn.
	if code := e.c.End(ctx, "a", pid, epoch, true, vNew); code != wire.NoError {
		t.Fatalf("retry: %v", code)
	}
	if code := e.c.End(ctx, "a", pid, epoch, false, vNew); code != wire.InvalidTxnState {
		t.Fatalf("abort after commit: %v", code)
	}
	if len(e.be.markerList()) != 2 {
		t.Fatal("a retry wrote markers")
	}
	// The next transaction starts afresh.
	e.add(t, "a", pid, epoch, parts("t/1")...)
	if tx := e.describe(t, "a"); tx.State != Ongoing || len(tx.Partitions) != 1 || tx.Partitions[0].First != 22 {
		t.Fatalf("next transaction %+v", tx)
	}
}

func TestEndAbort(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.be.setHW("t", 0, 10)
	e.add(t, "a", pid, epoch, parts("t/0", "u/0")...)
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Offset: 3}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.be.produce("t", 0, 4)
	e.end(t, "a", pid, epoch, false)
	m := e.be.markerList()
	if len(m) != 2 || m[0].C.Commit || m[1].C.Commit || m[0].Offset != 14 || m[0].C.ProducerEpoch != epoch {
		t.Fatalf("markers %+v", m)
	}
	if len(e.be.commitList()) != 0 {
		t.Fatal("offsets committed")
	}
	want := []Aborted{{pid, 10, 14}}
	if got := e.c.Index.AbortedList("t", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v", got)
	}
	v, ok := e.st.get(NamespaceAborted, "t/0")
	if !ok {
		t.Fatal("aborted index not persisted")
	}
	if got, err := decodeAborted(v); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("persisted aborted index %v %v", got, err)
	}
	if got := e.c.Index.AbortedIn(nil, "t", 0, 0, 11); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedIn %v", got)
	}
	if s := e.describe(t, "a").State; s != CompleteAbort {
		t.Fatal(s)
	}
	if code := e.c.End(ctx, "a", pid, epoch, false, vNew); code != wire.NoError {
		t.Fatalf("retry: %v", code)
	}
	if code := e.c.End(ctx, "a", pid, epoch, true, vNew); code != wire.InvalidTxnState {
		t.Fatalf("commit after abort: %v", code)
	}
}

func TestEndEmpty(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	for _, commit := range []bool{true, false} {
		if code := e.c.End(ctx, "a", pid, epoch, commit, vNew); code != wire.InvalidTxnState {
			t.Fatalf("End(%v) in Empty: %v", commit, code)
		}
	}
}

func TestEndMarkersFail(t *testing.T) {
	for _, via := range []string{"end-retry", "tick"} {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprint(via, "/commit=", commit), func(t *testing.T) {
				e := newEnv(t)
				pid, epoch := e.init(t, "a")
				e.add(t, "a", pid, epoch, parts("t/0", "t/1")...)
				if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
					t.Fatal(code)
				}
				if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Offset: 3}}); code != wire.NoError {
					t.Fatal(code)
				}
				// t/1's marker fails.
				e.be.set(func(b *fakeBackend) {
					b.markerErr = func(_ string, p int32) error {
						if p == 1 {
							return store.ErrUnavailable
						}
						return nil
					}
				})
				if code := e.c.End(ctx, "a", pid, epoch, commit, vNew); code != wire.NoError {
					t.Fatalf("End: %v", code)
				}
				prepared := PrepareAbort
				if commit {
					prepared = PrepareCommit
				}
				if s := e.describe(t, "a").State; s != prepared {
					t.Fatalf("state %v", s)
				}
				if got, _ := e.stored(t, "a"); got.State != prepared {
					t.Fatalf("stored state %v", got.State)
				}
				if len(e.be.commitList()) != 0 {
					t.Fatal("offsets committed before every marker")
				}
				if !e.c.PendingOffset("g", "t", 0) {
					t.Fatal("offset not pending while prepared")
				}
				if e.c.Index.LastStable("t", 1, 100) != 0 {
					t.Fatal("t/1 closed without its marker")
				}
				// A new transaction must wait.
				if code := e.c.AddPartitions(ctx, "a", pid, epoch, parts("t/2"), vNew); code != wire.ConcurrentTransactions {
					t.Fatalf("AddPartitions while prepared: %v", code)
				}
				e.be.set(func(b *fakeBackend) { b.markerErr = nil })
				switch via {
				case "end-retry":
					if code := e.c.End(ctx, "a", pid, epoch, commit, vNew); code != wire.NoError {
						t.Fatalf("retry: %v", code)
					}
				case "tick":
					e.c.Tick(ctx)
				}
				done := CompleteAbort
				if commit {
					done = CompleteCommit
				}
				if s := e.describe(t, "a").State; s != done {
					t.Fatalf("state %v", s)
				}
				if e.c.Index.LastStable("t", 1, 100) != 100 || e.c.PendingOffset("g", "t", 0) {
					t.Fatal("still open")
				}
				if n := len(e.be.commitList()); commit && n != 1 || !commit && n != 0 {
					t.Fatalf("%d commits", n)
				}
				// Every partition got a marker of the outcome.
				seen := map[int32]bool{}
				for _, m := range e.be.markerList() {
					if m.C.Commit != commit {
						t.Fatalf("marker %+v", m)
					}
					seen[m.Partition] = true
				}
				if !seen[0] || !seen[1] {
					t.Fatalf("markers %+v", e.be.markerList())
				}
			})
		}
	}
}

func TestEndOffsetsCommitFails(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Offset: 3}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.be.set(func(b *fakeBackend) { b.commitErr = func(string) error { return store.ErrUnavailable } })
	e.end(t, "a", pid, epoch, true)
	if s := e.describe(t, "a").State; s != PrepareCommit {
		t.Fatalf("state %v", s)
	}
	e.be.set(func(b *fakeBackend) { b.commitErr = nil })
	e.c.Tick(ctx)
	if s := e.describe(t, "a").State; s != CompleteCommit || len(e.be.commitList()) != 1 {
		t.Fatalf("state %v, commits %v", s, e.be.commitList())
	}
}

// A partition deleted before its marker has nothing to end.
func TestEndPartitionGone(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0", "gone/0")...)
	e.be.set(func(b *fakeBackend) {
		b.markerErr = func(topic string, _ int32) error {
			if topic == "gone" {
				return store.ErrUnknownTopic
			}
			return nil
		}
	})
	e.end(t, "a", pid, epoch, false)
	if s := e.describe(t, "a").State; s != CompleteAbort {
		t.Fatal(s)
	}
	if e.c.Index.LastStable("gone", 0, 5) != 5 || len(e.c.Index.AbortedList("gone", 0)) != 0 {
		t.Fatal("gone partition left in the index")
	}
}

// ---- Produce ----

func TestCheckProduce(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	_, epoch2 := e.init(t, "a")
	if epoch2 != epoch+1 {
		t.Fatal(epoch2)
	}
	epoch = epoch2
	e.add(t, "a", pid, epoch, parts("t/0")...)
	cases := []struct {
		name  string
		pid   int64
		epoch int16
		part  string
		want  wire.ErrorCode
	}{
		{"unknown-pid", pid + 100, epoch, "t/0", wire.InvalidProducerIDMapping},
		{"stale-epoch", pid, epoch - 1, "t/0", wire.InvalidProducerEpoch},
		{"future-epoch", pid, epoch + 1, "t/0", wire.InvalidTxnState},
		{"not-added", pid, epoch, "t/1", wire.InvalidTxnState},
		{"other-topic", pid, epoch, "u/0", wire.InvalidTxnState},
		{"ok", pid, epoch, "t/0", wire.NoError},
	}
	for _, c := range cases {
		p := parts(c.part)[0]
		adm, code := e.c.CheckProduce(c.pid, c.epoch, p.Topic, p.Partition)
		if code != c.want {
			t.Errorf("%s: %v, want %v", c.name, code, c.want)
		}
		adm.Done() // a no-op when refused
	}
	e.end(t, "a", pid, epoch, true)
	if _, code := e.c.CheckProduce(pid, epoch, "t", 0); code != wire.InvalidTxnState {
		t.Fatalf("after End: %v", code)
	}
}

// TestMarkerWaitsForProduce: EndTxn's marker is written only once an
// admitted append has called Done.
func TestMarkerWaitsForProduce(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	adm, code := e.c.CheckProduce(pid, epoch, "t", 0)
	if code != wire.NoError {
		t.Fatal(code)
	}
	var mu sync.Mutex
	appended := false
	markerSeen := make(chan bool, 1)
	e.be.set(func(b *fakeBackend) {
		b.onMarker = func(marker) {
			mu.Lock()
			markerSeen <- appended
			mu.Unlock()
		}
	})
	ended := make(chan wire.ErrorCode)
	go func() { ended <- e.c.End(ctx, "a", pid, epoch, true, vNew) }()
	// End is parked on the transaction's lock.
	waitBlocked(t, "(*Coordinator).End", "(*RWMutex).Lock")
	select {
	case <-ended:
		t.Fatal("End returned while an append was in flight")
	case <-markerSeen:
		t.Fatal("marker written while an append was in flight")
	default:
	}
	// A second append is not admitted past the waiting End: it waits,
	// then finds the transaction ended.
	second := make(chan wire.ErrorCode)
	go func() {
		p, code := e.c.CheckProduce(pid, epoch, "t", 0)
		p.Done()
		second <- code
	}()
	mu.Lock()
	appended = true // the append happens here
	mu.Unlock()
	e.be.produce("t", 0, 1)
	adm.Done()
	if code := <-ended; code != wire.NoError {
		t.Fatal(code)
	}
	if !<-markerSeen {
		t.Fatal("marker before the append")
	}
	if code := <-second; code != wire.InvalidTxnState {
		t.Fatalf("append after End: %v", code)
	}
	if m := e.be.markerList(); len(m) != 1 || m[0].Offset != 1 {
		t.Fatalf("markers %+v", m)
	}
}

// ---- Tick ----

func TestTickTimeout(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a") // timeout 10 s
	e.be.setHW("t", 0, 5)
	e.add(t, "a", pid, epoch, parts("t/0")...)
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, "g", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "a", "g", pid, epoch, []Offset{{Topic: "t", Offset: 3}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.clk.add(10 * time.Second) // exactly the timeout: not past it
	e.c.Tick(ctx)
	if s := e.describe(t, "a").State; s != Ongoing {
		t.Fatalf("aborted at its timeout: %v", s)
	}
	e.clk.add(time.Millisecond)
	e.c.Tick(ctx)
	tx := e.describe(t, "a")
	if tx.State != CompleteAbort || tx.Epoch != epoch+1 {
		t.Fatalf("after the timeout %+v", tx)
	}
	m := e.be.markerList()
	if len(m) != 1 || m[0].C.Commit || m[0].C.ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v", m)
	}
	if len(e.be.commitList()) != 0 || e.c.PendingOffset("g", "t", 0) {
		t.Fatal("offsets of a timed-out transaction")
	}
	if got := e.c.Index.AbortedList("t", 0); !reflect.DeepEqual(got, []Aborted{{pid, 5, 5}}) {
		t.Fatalf("aborted %v", got)
	}
	// The producer is fenced.
	if code := e.c.End(ctx, "a", pid, epoch, true, vNew); code != wire.ProducerFenced {
		t.Fatalf("End: %v", code)
	}
	if code := e.c.End(ctx, "a", pid, epoch, true, vOld); code != wire.InvalidProducerEpoch {
		t.Fatalf("End v1: %v", code)
	}
	if _, code := e.c.CheckProduce(pid, epoch, "t", 0); code != wire.InvalidProducerEpoch {
		t.Fatalf("Produce: %v", code)
	}
	// A timed-out abort whose markers fail is completed later.
	pid2, epoch2 := e.init(t, "b")
	e.add(t, "b", pid2, epoch2, parts("t/0")...)
	e.be.set(func(b *fakeBackend) { b.markerErr = func(string, int32) error { return store.ErrUnavailable } })
	e.clk.add(11 * time.Second)
	e.c.Tick(ctx)
	if tx := e.describe(t, "b"); tx.State != PrepareAbort || tx.Epoch != epoch2+1 {
		t.Fatalf("b: %+v", tx)
	}
	e.be.set(func(b *fakeBackend) { b.markerErr = nil })
	e.c.Tick(ctx)
	if tx := e.describe(t, "b"); tx.State != CompleteAbort || tx.Epoch != epoch2+1 {
		t.Fatalf("b: %+v", tx)
	}
}

func TestTickExpiration(t *testing.T) {
	e := newEnv(t) // IDExpiration 1 h
	pidA, _ := e.init(t, "a")
	pidB, epochB := e.init(t, "b")
	e.add(t, "b", pidB, epochB, parts("t/0")...)
	e.end(t, "b", pidB, epochB, true)
	pidC, epochC := e.init(t, "c")
	e.add(t, "c", pidC, epochC, parts("t/0")...)
	e.clk.add(time.Hour) // not past
	if code := e.c.End(ctx, "c", pidC, epochC, false, vNew); code != wire.NoError {
		t.Fatal(code)
	}
	e.c.Tick(ctx)
	if len(e.c.List()) != 3 {
		t.Fatal("expired at the limit")
	}
	e.clk.add(time.Millisecond)
	e.c.Tick(ctx)
	for _, id := range []string{"a", "b"} {
		if _, ok := e.c.Describe(id); ok {
			t.Fatalf("%s not expired", id)
		}
		if _, ok := e.st.get(NamespaceTxn, id); ok {
			t.Fatalf("%s still stored", id)
		}
	}
	if _, ok := e.c.Describe("c"); !ok {
		t.Fatal("c expired (updated at its End)")
	}
	if _, code := e.c.CheckProduce(pidA, 0, "t", 0); code != wire.InvalidProducerIDMapping {
		t.Fatalf("expired producer id: %v", code)
	}
	if code := e.c.AddPartitions(ctx, "b", pidB, epochB, parts("t/0"), vNew); code != wire.InvalidProducerIDMapping {
		t.Fatalf("expired id: %v", code)
	}
	// The id starts again with a new producer id.
	if pid, epoch := e.init(t, "a"); pid == pidA || epoch != 0 {
		t.Fatalf("re-created: %d %d", pid, epoch)
	}
	// A failing delete keeps the id.
	e.clk.add(2 * time.Hour)
	e.st.failNS(NamespaceTxn)
	e.c.Tick(ctx)
	if _, ok := e.c.Describe("a"); !ok {
		t.Fatal("expired without its delete stored")
	}
}

// ---- Load, Recover ----

func TestLoadRecover(t *testing.T) {
	e := newEnv(t)
	e.be.setHW("t", 0, 10)
	e.be.setHW("t", 1, 20)
	// a: committed.
	pa, ea := e.init(t, "a")
	e.add(t, "a", pa, ea, parts("t/0")...)
	e.end(t, "a", pa, ea, true)
	// b: aborted.
	pb, eb := e.init(t, "b")
	e.add(t, "b", pb, eb, parts("t/0")...)
	e.end(t, "b", pb, eb, false)
	// c: open with an offset.
	pc, ec := e.init(t, "c")
	e.add(t, "c", pc, ec, parts("t/0", "t/1")...)
	if code := e.c.AddOffsets(ctx, "c", pc, ec, "g", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "c", "g", pc, ec, []Offset{{Topic: "t", Offset: 1}}); code != wire.NoError {
		t.Fatal(code)
	}
	// d: prepared to commit, its markers failing (the "crash").
	pd, ed := e.init(t, "d")
	e.add(t, "d", pd, ed, parts("t/1")...)
	if code := e.c.AddOffsets(ctx, "d", pd, ed, "h", vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "d", "h", pd, ed, []Offset{{Topic: "t", Partition: 1, Offset: 7}}); code != wire.NoError {
		t.Fatal(code)
	}
	e.be.set(func(b *fakeBackend) { b.markerErr = func(string, int32) error { return store.ErrUnavailable } })
	e.end(t, "d", pd, ed, true)
	before := map[string]Txn{}
	for _, tx := range e.c.List() {
		before[tx.ID] = norm(tx)
	}
	n := e.reopen(t)
	after := map[string]Txn{}
	for _, tx := range n.c.List() {
		after[tx.ID] = norm(tx)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", after, before)
	}
	if got, want := n.c.Index.AbortedList("t", 0), e.c.Index.AbortedList("t", 0); len(want) != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted index %v, want %v", got, want)
	}
	// c and d are open: t/0 from c's first, t/1 from c's and d's.
	if n.c.Index.LastStable("t", 0, 100) != after["c"].Partitions[0].First || n.c.Index.LastStable("t", 1, 100) != 20 {
		t.Fatalf("last stable %d %d", n.c.Index.LastStable("t", 0, 100), n.c.Index.LastStable("t", 1, 100))
	}
	if !n.c.PendingOffset("g", "t", 0) || !n.c.PendingOffset("h", "t", 1) {
		t.Fatal("pending offsets not loaded")
	}
	// Produce of the open transaction still admitted after the restart.
	if p, code := n.c.CheckProduce(pc, ec, "t", 1); code != wire.NoError {
		t.Fatalf("CheckProduce after Load: %v", code)
	} else {
		p.Done()
	}
	n.c.Recover(ctx)
	d := n.describe(t, "d")
	if d.State != CompleteCommit {
		t.Fatalf("d after Recover: %v", d.State)
	}
	if got, _ := n.stored(t, "d"); got.State != CompleteCommit {
		t.Fatal("d's completion not stored")
	}
	if m := n.be.markerList(); len(m) != 1 || m[0].Partition != 1 || !m[0].C.Commit || m[0].C.ProducerID != pd {
		t.Fatalf("markers %+v", m)
	}
	if c := n.be.commitList(); len(c) != 1 || c[0].Group != "h" {
		t.Fatalf("commits %+v", c)
	}
	if n.c.PendingOffset("h", "t", 1) || !n.c.PendingOffset("g", "t", 0) {
		t.Fatal("pending after Recover")
	}
	if n.c.Index.LastStable("t", 1, 100) != 20 { // c still open there
		t.Fatal("t/1")
	}
	// c can still finish.
	n.end(t, "c", pc, ec, true)
	if n.c.Index.LastStable("t", 0, 100) != 100 || n.c.Index.LastStable("t", 1, 100) != 100 {
		t.Fatal("c still open")
	}
}

func TestRecoverPrepareAbort(t *testing.T) {
	e := newEnv(t)
	e.be.setHW("t", 0, 10)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	e.be.set(func(b *fakeBackend) { b.markerErr = func(string, int32) error { return store.ErrUnavailable } })
	e.end(t, "a", pid, epoch, false)
	n := e.reopen(t)
	n.be.produce("t", 0, 2)
	n.c.Recover(ctx)
	if s := n.describe(t, "a").State; s != CompleteAbort {
		t.Fatal(s)
	}
	want := []Aborted{{pid, 10, 12}}
	if got := n.c.Index.AbortedList("t", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v", got)
	}
	// And it survives another restart.
	m := n.reopen(t)
	if got := m.c.Index.AbortedList("t", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("reloaded aborted %v", got)
	}
}

func TestLoadSkipsCorrupt(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init(t, "good")
	_ = e.st.PutSystem(ctx, NamespaceTxn, "bad", []byte{9, 9})
	_ = e.st.PutSystem(ctx, NamespaceAborted, "t/0", []byte{1})
	_ = e.st.PutSystem(ctx, NamespaceAborted, "nokey", encodeAborted([]Aborted{{1, 2, 3}}))
	_ = e.st.PutSystem(ctx, NamespaceAborted, "t/1", encodeAborted([]Aborted{{1, 2, 3}}))
	n := e.reopen(t)
	if l := n.c.List(); len(l) != 1 || l[0].ProducerID != pid {
		t.Fatalf("List %+v", l)
	}
	if len(n.c.Index.AbortedList("t", 1)) != 1 || n.c.Index.AbortedList("t", 0) != nil {
		t.Fatal("aborted indexes")
	}
	e.st.loadErr = errStore
	if err := New(e.cfg, e.be, e.st).Load(ctx); err == nil {
		t.Fatal("Load ignored a store error")
	}
}

// ---- persistence before the answer ----

func TestPersistFailureLeavesStateUnchanged(t *testing.T) {
	type setup struct {
		e     *env
		pid   int64
		epoch int16
	}
	ops := []struct {
		name    string
		ongoing bool
		op      func(s *setup) wire.ErrorCode
	}{
		{"InitProducerID-existing", false, func(s *setup) wire.ErrorCode {
			_, _, code := s.e.c.InitProducerID(ctx, "a", 2000, -1, -1, vNew)
			return code
		}},
		{"InitProducerID-ongoing", true, func(s *setup) wire.ErrorCode {
			_, _, code := s.e.c.InitProducerID(ctx, "a", 2000, -1, -1, vNew)
			return code
		}},
		{"AddPartitions", false, func(s *setup) wire.ErrorCode {
			return s.e.c.AddPartitions(ctx, "a", s.pid, s.epoch, parts("t/5"), vNew)
		}},
		{"AddPartitions-ongoing", true, func(s *setup) wire.ErrorCode {
			return s.e.c.AddPartitions(ctx, "a", s.pid, s.epoch, parts("t/5"), vNew)
		}},
		{"AddOffsets", false, func(s *setup) wire.ErrorCode {
			return s.e.c.AddOffsets(ctx, "a", s.pid, s.epoch, "g2", vNew)
		}},
		{"CommitOffsets", true, func(s *setup) wire.ErrorCode {
			return s.e.c.CommitOffsets(ctx, "a", "g2", s.pid, s.epoch, []Offset{{Topic: "t", Partition: 4, Offset: 1}})
		}},
		{"End-commit", true, func(s *setup) wire.ErrorCode { return s.e.c.End(ctx, "a", s.pid, s.epoch, true, vNew) }},
		{"End-abort", true, func(s *setup) wire.ErrorCode { return s.e.c.End(ctx, "a", s.pid, s.epoch, false, vNew) }},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			e := newEnv(t)
			s := &setup{e: e}
			s.pid, s.epoch = e.init(t, "a")
			if o.ongoing {
				e.be.setHW("t", 0, 3)
				e.add(t, "a", s.pid, s.epoch, parts("t/0")...)
				if code := e.c.AddOffsets(ctx, "a", s.pid, s.epoch, "g", vNew); code != wire.NoError {
					t.Fatal(code)
				}
				if code := e.c.CommitOffsets(ctx, "a", "g", s.pid, s.epoch, []Offset{{Topic: "t", Offset: 1}}); code != wire.NoError {
					t.Fatal(code)
				}
			}
			before := e.describe(t, "a")
			stored := e.st.snapshot()
			lso := e.c.Index.LastStable("t", 0, 100)
			e.clk.add(time.Second)
			e.st.failNS(NamespaceTxn)
			if code := o.op(s); code != wire.CoordinatorNotAvailable {
				t.Fatalf("code %v, want COORDINATOR_NOT_AVAILABLE", code)
			}
			if got := e.describe(t, "a"); !reflect.DeepEqual(got, before) {
				t.Fatalf("state changed:\n%+v\n%+v", got, before)
			}
			if !reflect.DeepEqual(e.st.snapshot(), stored) {
				t.Fatal("store changed")
			}
			if len(e.be.markerList()) != 0 {
				t.Fatalf("markers written: %+v", e.be.markerList())
			}
			if e.c.Index.LastStable("t", 0, 100) != lso || e.c.Index.LastStable("t", 5, 100) != 100 {
				t.Fatal("index changed")
			}
			if e.c.PendingOffset("g", "t", 0) != o.ongoing || e.c.PendingOffset("g2", "t", 4) {
				t.Fatal("pending offsets changed")
			}
			// The store back: the retry succeeds.
			e.st.setFail(nil)
			if code := o.op(s); code != wire.NoError {
				t.Fatalf("retry: %v", code)
			}
		})
	}
}

func TestInitProducerIDNewPersistFails(t *testing.T) {
	e := newEnv(t)
	e.st.failNS(NamespaceTxn)
	if pid, epoch, code := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew); code != wire.CoordinatorNotAvailable || pid != -1 || epoch != -1 {
		t.Fatalf("%d %d %v", pid, epoch, code)
	}
	if _, ok := e.c.Describe("a"); ok || len(e.c.List()) != 0 {
		t.Fatal("id kept")
	}
	if _, code := e.c.CheckProduce(1000, 0, "t", 0); code != wire.InvalidProducerIDMapping {
		t.Fatalf("producer id kept: %v", code)
	}
	e.st.setFail(nil)
	if _, epoch := e.init(t, "a"); epoch != 0 {
		t.Fatal(epoch)
	}
}

// TestAbortedIndexPersistFails: the abort's markers are written but its
// aborted index is not stored: the transaction stays prepared and is
// completed (and the index stored) later.
func TestAbortedIndexPersistFails(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	e.st.failNS(NamespaceAborted)
	e.end(t, "a", pid, epoch, false)
	if s := e.describe(t, "a").State; s != PrepareAbort {
		t.Fatal(s)
	}
	e.st.setFail(nil)
	e.c.Tick(ctx)
	if s := e.describe(t, "a").State; s != CompleteAbort {
		t.Fatal(s)
	}
	v, ok := e.st.get(NamespaceAborted, "t/0")
	if !ok {
		t.Fatal("aborted index not stored")
	}
	list, _ := decodeAborted(v)
	if len(list) == 0 || list[0].ProducerID != pid {
		t.Fatalf("stored aborted index %v", list)
	}
}

func TestPruneAndDropTopic(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	for i := range 3 {
		e.add(t, "a", pid, epoch, parts("t/0", "t/1")...)
		e.be.produce("t", 0, 2)
		e.end(t, "a", pid, epoch, false)
		_ = i
	}
	if len(e.c.Index.AbortedList("t", 0)) != 3 {
		t.Fatal(e.c.Index.AbortedList("t", 0))
	}
	if err := e.c.PruneAborted(ctx, "t", 0, 0); err != nil {
		t.Fatal(err)
	}
	firstMarker := e.c.Index.AbortedList("t", 0)[0].Last
	if err := e.c.PruneAborted(ctx, "t", 0, firstMarker+1); err != nil {
		t.Fatal(err)
	}
	v, _ := e.st.get(NamespaceAborted, "t/0")
	if l, _ := decodeAborted(v); len(l) != 2 {
		t.Fatalf("persisted after prune %v", l)
	}
	if err := e.c.PruneAborted(ctx, "t", 0, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.st.get(NamespaceAborted, "t/0"); ok {
		t.Fatal("empty aborted index still stored")
	}
	if err := e.c.DropTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.st.get(NamespaceAborted, "t/1"); ok || e.c.Index.AbortedList("t", 1) != nil {
		t.Fatal("dropped topic's index kept")
	}
	// Failures are reported.
	e.add(t, "a", pid, epoch, parts("u/0")...)
	e.end(t, "a", pid, epoch, false)
	e.st.failNS(NamespaceAborted)
	if err := e.c.DropTopic(ctx, "u"); err == nil {
		t.Fatal("DropTopic hid a store error")
	}
}

// ---- concurrency: ids removed while a request waits for them ----

// TestInitWaitingOnFailedCreate: a second InitProducerId of a new id waits
// on the first, whose create fails; the second must not answer with an id
// the coordinator then does not know.
func TestInitWaitingOnFailedCreate(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	first := true
	var mu sync.Mutex
	e.st.setFail(func(ns, key string, _ []byte) error {
		mu.Lock()
		f := first
		first = false
		mu.Unlock()
		if f {
			<-release
			return errStore
		}
		return nil
	})
	type res struct {
		pid   int64
		epoch int16
		code  wire.ErrorCode
	}
	r1 := make(chan res)
	go func() {
		p, ep, c := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew)
		r1 <- res{p, ep, c}
	}()
	waitBlocked(t, "(*memStore).PutSystem", "InitProducerID")
	r2 := make(chan res)
	go func() {
		p, ep, c := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew)
		r2 <- res{p, ep, c}
	}()
	waitBlocked(t, "InitProducerID", "(*RWMutex).Lock")
	close(release)
	if r := <-r1; r.code != wire.CoordinatorNotAvailable {
		t.Fatalf("first: %+v", r)
	}
	r := <-r2
	if r.code != wire.NoError {
		return // refused: fine
	}
	tx, ok := e.c.Describe("a")
	if !ok || tx.ProducerID != r.pid || tx.Epoch != r.epoch {
		t.Fatalf("second answered %d/%d but the coordinator has %+v (known %v)", r.pid, r.epoch, tx, ok)
	}
	if code := e.c.AddPartitions(ctx, "a", r.pid, r.epoch, parts("t/0"), vNew); code != wire.NoError {
		t.Fatalf("AddPartitions with the answered id: %v", code)
	}
}

// TestRequestWaitingOnExpiry: a request waits on an id Tick is expiring;
// its answer must hold in the coordinator afterwards.
func TestRequestWaitingOnExpiry(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init(t, "a")
	e.clk.add(2 * time.Hour)
	release := make(chan struct{})
	e.st.setFail(func(ns, key string, v []byte) error {
		if v == nil { // the expiry's delete
			<-release
		}
		return nil
	})
	ticked := make(chan struct{})
	go func() { e.c.Tick(ctx); close(ticked) }()
	waitBlocked(t, "(*memStore).PutSystem", "(*Coordinator).Tick")
	type res struct {
		pid   int64
		epoch int16
		code  wire.ErrorCode
	}
	r := make(chan res)
	go func() {
		p, ep, c := e.c.InitProducerID(ctx, "a", 1000, -1, -1, vNew)
		r <- res{p, ep, c}
	}()
	waitBlocked(t, "InitProducerID", "(*RWMutex).Lock")
	close(release)
	<-ticked
	got := <-r
	if got.code != wire.NoError {
		t.Fatalf("InitProducerID: %v", got.code)
	}
	tx, ok := e.c.Describe("a")
	if !ok || tx.ProducerID != got.pid || tx.Epoch != got.epoch {
		t.Fatalf("answered %d/%d (old pid %d) but the coordinator has %+v (known %v)", got.pid, got.epoch, pid, tx, ok)
	}
	if st, ok := e.stored(t, "a"); !ok || st.ProducerID != got.pid || st.Epoch != got.epoch {
		t.Fatalf("stored %+v %v", st, ok)
	}
}

// TestCoordinatorConcurrent drives many ids from many goroutines at once
// (run with -race), with Tick, List and CheckProduce alongside.
func TestCoordinatorConcurrent(t *testing.T) {
	e := newEnv(t)
	const ids, rounds = 8, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.c.Tick(ctx)
			_ = e.c.List()
			_ = e.c.Index.LastStable("t", 0, math.MaxInt64)
			_ = e.c.PendingOffset("g", "t", 0)
		}
	}()
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("id-", i)
			pid, epoch, code := e.c.InitProducerID(ctx, id, 60_000, -1, -1, vNew)
			if code != wire.NoError {
				t.Error(code)
				return
			}
			for r := range rounds {
				ps := parts("t/0", fmt.Sprintf("t/%d", 1+r%3))
				if code := e.c.AddPartitions(ctx, id, pid, epoch, ps, vNew); code != wire.NoError {
					t.Error(code)
					return
				}
				for _, p := range ps {
					adm, code := e.c.CheckProduce(pid, epoch, p.Topic, p.Partition)
					if code != wire.NoError {
						t.Error(code)
						return
					}
					e.be.produce(p.Topic, p.Partition, 1)
					adm.Done()
				}
				if code := e.c.AddOffsets(ctx, id, pid, epoch, "g", vNew); code != wire.NoError {
					t.Error(code)
					return
				}
				if code := e.c.CommitOffsets(ctx, id, "g", pid, epoch, []Offset{{Topic: "t", Offset: int64(r)}}); code != wire.NoError {
					t.Error(code)
					return
				}
				if code := e.c.End(ctx, id, pid, epoch, r%2 == 0, vNew); code != wire.NoError {
					t.Error(code)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	for p := range int32(4) {
		if hw := e.be.getHW("t", p); e.c.Index.LastStable("t", p, hw) != hw {
			t.Fatalf("t/%d still has an open transaction", p)
		}
	}
	if e.c.PendingOffset("g", "t", 0) {
		t.Fatal("pending offsets left")
	}
	// Each abort left one entry per partition of its transaction.
	if n := len(e.c.Index.AbortedList("t", 0)); n != ids*rounds/2 {
		t.Fatalf("%d aborted on t/0, want %d", n, ids*rounds/2)
	}
}

// TestCoordinatorRefusesLongStrings: a string the persisted state cannot
// hold (over 65535 bytes: Encode's u16 lengths) is refused, not kept in a
// state that would not load after a restart.
func TestCoordinatorRefusesLongStrings(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	long := strings.Repeat("x", math.MaxUint16+1)
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, long, vNew); code != wire.InvalidGroupID {
		t.Errorf("AddOffsets with a long group: %v", code)
	}
	if code := e.c.AddPartitions(ctx, "a", pid, epoch, []Partition{{Topic: long}}, vNew); code != wire.InvalidTopicException {
		t.Errorf("AddPartitions with a long topic: %v", code)
	}
	e.add(t, "a", pid, epoch, parts("t/0")...)
	for _, c := range []struct {
		group string
		o     Offset
		want  wire.ErrorCode
	}{
		{long, Offset{Topic: "t"}, wire.InvalidGroupID},
		{"g", Offset{Topic: long}, wire.InvalidTopicException},
		{"g", Offset{Topic: "t", Metadata: long}, wire.OffsetMetadataTooLarge},
	} {
		if code := e.c.CommitOffsets(ctx, "a", c.group, pid, epoch, []Offset{c.o}); code != c.want {
			t.Errorf("CommitOffsets: %v, want %v", code, c.want)
		}
	}
	// The longest that fits is kept and survives a restart.
	fits := long[:math.MaxUint16]
	if code := e.c.AddOffsets(ctx, "a", pid, epoch, fits, vNew); code != wire.NoError {
		t.Fatal(code)
	}
	if code := e.c.CommitOffsets(ctx, "a", fits, pid, epoch, []Offset{{Topic: "t", Metadata: fits}}); code != wire.NoError {
		t.Fatal(code)
	}
	n := e.reopen(t)
	if tx := n.describe(t, "a"); !eqTxn(tx, e.describe(t, "a")) {
		t.Fatal("reloaded state differs")
	}
}

// TestConcurrentAbortsKeepAbortedIndex: two transactions abort on the same
// partition at once; the aborted index stored last must hold both, or a
// restart forgets one and read_committed shows its records.
func TestConcurrentAbortsKeepAbortedIndex(t *testing.T) {
	e := newEnv(t)
	p1, e1 := e.init(t, "a")
	p2, e2 := e.init(t, "b")
	e.add(t, "a", p1, e1, parts("t/0")...)
	e.add(t, "b", p2, e2, parts("t/0")...)
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	e.st.setFail(func(ns, _ string, _ []byte) error {
		if ns != NamespaceAborted {
			return nil
		}
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			<-release // a's store, overtaken by b's
		}
		return nil
	})
	done := make(chan wire.ErrorCode)
	go func() { done <- e.c.End(ctx, "a", p1, e1, false, vNew) }()
	waitBlocked(t, "(*memStore).PutSystem", "(*Coordinator).End")
	finished := make(chan wire.ErrorCode)
	go func() { finished <- e.c.End(ctx, "b", p2, e2, false, vNew) }()
	// b stores its list, or waits for a's store to finish first.
	select {
	case code := <-finished:
		if code != wire.NoError {
			t.Fatal(code)
		}
		close(release)
	case <-waitChan("(*Coordinator).End", "(*Mutex).Lock"):
		close(release)
		if code := <-finished; code != wire.NoError {
			t.Fatal(code)
		}
	}
	if code := <-done; code != wire.NoError {
		t.Fatal(code)
	}
	if got := e.c.Index.AbortedList("t", 0); len(got) != 2 {
		t.Fatalf("in memory: %v", got)
	}
	v, _ := e.st.get(NamespaceAborted, "t/0")
	stored, _ := decodeAborted(v)
	if len(stored) != 2 {
		t.Fatalf("stored aborted index %v, want both aborts", stored)
	}
}

// TestStatsAndOpen: the counters the gateway's metrics read.
func TestStatsAndOpen(t *testing.T) {
	e := newEnv(t)
	pa, ea := e.init(t, "a")
	pb, eb := e.init(t, "b")
	pc, ec := e.init(t, "c")
	if e.c.Open() != 0 {
		t.Fatal(e.c.Open())
	}
	e.add(t, "a", pa, ea, parts("t/0")...)
	e.add(t, "b", pb, eb, parts("t/0")...)
	e.add(t, "c", pc, ec, parts("t/0")...)
	if e.c.Open() != 3 {
		t.Fatal(e.c.Open())
	}
	e.end(t, "a", pa, ea, true)
	e.end(t, "b", pb, eb, false)
	e.end(t, "b", pb, eb, false) // a retry counts nothing
	e.clk.add(11 * time.Second)
	e.c.Tick(ctx) // c times out
	if e.c.Open() != 0 {
		t.Fatal(e.c.Open())
	}
	if c, a, to := e.c.Stats.Committed.Load(), e.c.Stats.Aborted.Load(), e.c.Stats.TimedOut.Load(); c != 1 || a != 2 || to != 1 {
		t.Fatalf("committed %d aborted %d timed out %d", c, a, to)
	}
}

// TestInitProducerIDRetryOfBump is Kafka's KIP-360 retry: a producer
// bumps its epoch (InitProducerId with its current id and epoch), loses
// the answer and sends the same request again; Kafka's
// prepareIncrementProducerEpoch recognizes the previous epoch
// (lastProducerEpoch) and answers the current one. The coordinator keeps
// no previous epoch (nor, after a rotation, previous producer id), so it
// fences the producer instead: a known gap, skipped until the persisted
// state carries them.
func TestInitProducerIDRetryOfBump(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	p1, e1, code := e.c.InitProducerID(ctx, "a", 1000, pid, epoch, 4)
	if code != wire.NoError || p1 != pid || e1 != epoch+1 {
		t.Fatalf("bump: %d %d %v", p1, e1, code)
	}
	// The answer was lost: the same request again.
	p2, e2, code := e.c.InitProducerID(ctx, "a", 1000, pid, epoch, 4)
	if code != wire.NoError || p2 != pid || e2 != e1 {
		t.Fatalf("retry: %d %d %v, want %d %d NONE", p2, e2, code, pid, e1)
	}
}

// TestTickTimeoutWhileProducing: a transaction past its timeout whose
// producer keeps an append in flight is not aborted, as Tick only
// TryLocks (Kafka aborts it whatever the producer does): a known gap,
// skipped.
func TestTickTimeoutWhileProducing(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init(t, "a")
	e.add(t, "a", pid, epoch, parts("t/0")...)
	adm, code := e.c.CheckProduce(pid, epoch, "t", 0)
	if code != wire.NoError {
		t.Fatal(code)
	}
	e.clk.add(time.Minute)
	e.c.Tick(ctx) // with the append in flight
	// Another append is refused: at once while the abort waits, or, when
	// it got behind the abort's pending lock (a CheckProduce here on the
	// test's goroutine would then wait for adm.Done below: a deadlock),
	// as fenced once the abort is done.
	second := make(chan wire.ErrorCode)
	go func() {
		p, code := e.c.CheckProduce(pid, epoch, "t", 0)
		p.Done()
		second <- code
	}()
	adm.Done()
	if code := <-second; code != wire.InvalidTxnState && code != wire.InvalidProducerEpoch {
		t.Fatalf("an append while the timeout abort waits: %v, want INVALID_TXN_STATE or INVALID_PRODUCER_EPOCH", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.describe(t, "a").State != CompleteAbort {
		if time.Now().After(deadline) {
			t.Fatalf("state %v 10 s after the append ended, want CompleteAbort", e.describe(t, "a").State)
		}
		time.Sleep(time.Millisecond) // the abort runs on its own goroutine once the append is done
	}
}

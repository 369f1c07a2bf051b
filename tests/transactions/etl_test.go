package transactions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestTxnETL proves exactly-once consume-transform-produce with franz-go's
// GroupTransactSession (the pattern of franz-go's own TestTxnEtl): members
// of one group read an input topic (4 partitions, read_committed) and, in
// one transaction per poll, write each record transformed (key kept, value
// "etl:"+value) to an output topic together with the group's offsets
// (TxnOffsetCommit), ending with End(TryCommit). Input keeps arriving
// during the run. Member A starts alone; member B joins mid-run (a
// rebalance: A's partitions are split, its transaction in flight aborted);
// then A crashes mid-transaction: its records of the open transaction are
// flushed to the output, then its connections are cut and the client
// closed without ending the transaction or leaving the group. B takes over
// A's partitions once A's session times out, the coordinator aborts A's
// transaction on its 10 s timeout, and B reprocesses A's uncommitted input.
// When the group's committed offsets reach the input's end, a
// read_committed consumer of the output must read every input record's
// transformation exactly once, and nothing else.
func TestTxnETL(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) { runETL(t, tg, nil) })
}

// runETL is TestTxnETL against tg; with killCoordinator set it calls it
// once B has committed its first transaction, both members transforming,
// before A crashes (killCoordinator kills the group's coordinator and
// brings it back).
func runETL(t *testing.T, tg target, killCoordinator func(group string, a, b *member)) {
	start := time.Now()
	in, out, group := uniqueName(t, "etl-in"), uniqueName(t, "etl-out"), uniqueName(t, "etl-group")
	const partitions = 4
	createTopic(t, tg, in, partitions)
	createTopic(t, tg, out, partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()

	// The input: 1,000 records, then 50 every 200 ms until A has
	// crashed, then 500 more.
	crashed := make(chan struct{})
	var wantMu sync.Mutex
	var want []string
	inputDone := make(chan error, 1)
	pr := client(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	go func() {
		n, after := 0, -1
		write := func(k int) error {
			var recs []*kgo.Record
			for range k {
				recs = append(recs, &kgo.Record{Topic: in, Partition: int32(n % partitions),
					Key: fmt.Appendf(nil, "k%05d", n), Value: fmt.Appendf(nil, "v%05d", n)})
				n++
			}
			if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return err
			}
			wantMu.Lock()
			for _, r := range recs {
				want = append(want, "etl:"+string(r.Value))
			}
			wantMu.Unlock()
			return nil
		}
		if err := write(1000); err != nil {
			inputDone <- err
			return
		}
		for after < 500 {
			select {
			case <-crashed:
				if after < 0 {
					after = 0
				}
			default:
			}
			if after >= 0 {
				after += 50
			}
			if n > 20000 {
				inputDone <- errors.New("member A never crashed (20,000 records written)")
				return
			}
			if err := write(50); err != nil {
				inputDone <- err
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		inputDone <- nil
	}()

	var errMu sync.Mutex
	var errs []error
	// groupMoved: the group's coordinator is being killed. The group
	// moves to another instance and back when the killed one returns,
	// each restoring it as stored (docs/design/cluster.md §7), but a
	// franz-go member whose heartbeat fails to connect ends its session
	// all the same: it injects the error into a poll as an ErrGroupSession
	// (informational) and rejoins, and may meet UNKNOWN_MEMBER_ID or
	// NOT_COORDINATOR on the way. Those are expected then; the group must
	// still finish.
	var groupMoved atomic.Bool
	report := func(err error) {
		if groupMoved.Load() && (groupMoveErr(err) || endMoveErr(err)) {
			t.Logf("%s: %v (the group's coordinator was killed: the member rejoins)", tg.name, err)
			return
		}
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	// A's transactions time out after 10 s: the one it leaves open when it
	// crashes is aborted by then, and B's read_committed Fetches pass it.
	// B's get 30 s: it is never left open, but when the group's
	// coordinator is killed franz-go's members rejoin, once per move (see
	// groupMoved), and once in CI, on two loaded cores, that kept B's
	// transaction open past 10 s; the coordinator then aborted it and
	// fenced B, as Kafka's does a producer whose transaction times out, and
	// B could not finish.
	a := startMember(t, tg, "A", 10*time.Second, in, out, group, report)
	testtools.WaitFor(t, 60*time.Second, tg.name+": member A committing 300 records", func() bool { return a.committed.Load() >= 300 })
	b := startMember(t, tg, "B", 30*time.Second, in, out, group, report)
	testtools.WaitFor(t, 60*time.Second, tg.name+": member B committing a transaction", func() bool { return b.committed.Load() > 0 })
	t.Logf("%s: B joined at %v (A had committed %d records); B committed its first transaction", tg.name, time.Since(start).Round(time.Millisecond), a.committed.Load())
	if killCoordinator != nil {
		groupMoved.Store(true)
		killCoordinator(group, a, b)
		t.Logf("%s: the server is back at %v; A has committed %d records, B %d", tg.name, time.Since(start).Round(time.Millisecond), a.committed.Load(), b.committed.Load())
		at := a.committed.Load() + b.committed.Load()
		testtools.WaitFor(t, 60*time.Second, tg.name+": the members committing after the crash", func() bool { return a.committed.Load()+b.committed.Load() > at })
	}
	a.crashAt.Store(true)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: member A did not crash mid-transaction within 30 s (it had no records to transform?)", tg.name)
	}
	close(crashed)
	t.Logf("%s: A crashed at %v with %d records of an open transaction flushed to the output", tg.name, time.Since(start).Round(time.Millisecond), a.flushedAtCrash.Load())
	if err := <-inputDone; err != nil {
		t.Fatalf("%s: writing the input: %v", tg.name, err)
	}
	wantMu.Lock()
	total := len(want)
	wantMu.Unlock()

	// B alone finishes: the group's offsets reach the input's end.
	adm := admin(t, tg)
	var lag int64
	if !testtools.EventuallyEvery(80*time.Second, 200*time.Millisecond, func() bool {
		ends, err := adm.ListEndOffsets(ctx, in)
		if err != nil {
			return false
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		lag = 0
		ends.Each(func(o kadm.ListedOffset) {
			c, _ := offs.Lookup(in, o.Partition)
			lag += o.Offset - max(c.At, 0)
		})
		return lag == 0
	}) {
		t.Fatalf("%s: the group's committed offsets are %d records short of the input's end (%d records) 80 s after A crashed; B committed %d records; errors %v",
			tg.name, lag, total, b.committed.Load(), errs)
	}
	b.stop.Store(true)
	<-b.done
	t.Logf("%s: the group consumed all %d input records at %v (A committed %d, B %d)", tg.name, total, time.Since(start).Round(time.Millisecond), a.committed.Load(), b.committed.Load())
	for _, err := range errs {
		t.Errorf("%s: %v", tg.name, err)
	}

	rc := readAll(t, tg, out, partitions, kgo.ReadCommitted())
	if d := exactlyOnce(want, values(rc)); d != "" {
		t.Errorf("%s: output read with read_committed: %s", tg.name, d)
	}
	for _, r := range rc {
		if string(r.Value) != "etl:v"+string(r.Key)[1:] {
			t.Errorf("%s: output record key %s value %s: not the transformation of one input record", tg.name, r.Key, r.Value)
			break
		}
	}
	ru := readAll(t, tg, out, partitions, kgo.ReadUncommitted())
	t.Logf("%s: output: %d records read_committed, %d read_uncommitted (aborted transactions' records included); %v in all",
		tg.name, len(rc), len(ru), time.Since(start).Round(time.Millisecond))
	if len(ru) <= len(rc) {
		t.Errorf("%s: read_uncommitted reads no more records (%d) than read_committed (%d): the crashed member's flushed transaction left nothing to abort, the test did not test it",
			tg.name, len(ru), len(rc))
	}
}

// groupMoveErr reports whether err is a group session error that a
// member sees while its group's coordinator dies and the group moves: the
// coordinator unreachable, or one that does not know the member or is not
// the coordinator any more, or one that restored the group as stored
// before the rebalance the member was in completed (ILLEGAL_GENERATION: the
// group moved back while the interim coordinator's rebalance was under way,
// docs/design/consumer-groups.md §6; Kafka's coordinator, which stores a
// group at the same point, answers the same).
func groupMoveErr(err error) bool {
	var gs *kgo.ErrGroupSession
	if !errors.As(err, &gs) {
		return false
	}
	for _, e := range []error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.NotCoordinator, kerr.CoordinatorNotAvailable,
		kerr.CoordinatorLoadInProgress, syscall.ECONNREFUSED, syscall.ECONNRESET, io.EOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return connDied(err)
}

// connDied reports whether err is franz-go's own word for a connection
// that died with the request in flight (its unexported
// errChosenBrokerDead, which errors.Is cannot name): the coordinator was
// killed under the request.
func connDied(err error) bool {
	return strings.Contains(err.Error(), "the broker connection has died")
}

// endMoveErr reports whether err is a transaction's end that failed
// because its group's coordinator, which takes the offsets, was down: the
// session aborts the transaction and goes on, and its records are
// transformed again.
func endMoveErr(err error) bool {
	if !strings.Contains(err.Error(), "ending a transaction") {
		return false
	}
	if strings.Contains(err.Error(), "connection refused") || connDied(err) {
		return true // franz-go may not wrap its dial error
	}
	for _, e := range []error{kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress,
		syscall.ECONNREFUSED, syscall.ECONNRESET, io.EOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// member is one GroupTransactSession of TestTxnETL, run by a goroutine.
type member struct {
	name      string
	txnID     string       // its transactional id
	committed atomic.Int64 // input records transformed in committed transactions
	// crashAt asks the member to crash in its next transaction, after
	// flushing its records; flushedAtCrash is how many it had flushed.
	crashAt        atomic.Bool
	flushedAtCrash atomic.Int64
	stop           atomic.Bool // asks the member to stop between transactions
	done           chan struct{}
}

// startMember starts a member that transforms in's records to out, in
// transactions that time out after txnTimeout, until stopped or crashed;
// it reports unexpected errors to report.
func startMember(t *testing.T, tg target, name string, txnTimeout time.Duration, in, out, group string, report func(error)) *member {
	t.Helper()
	m := &member{name: name, txnID: uniqueName(t, "etl-"+name), done: make(chan struct{})}
	ks := &killSwitch{}
	cctx, ccancel := context.WithCancel(context.Background())
	opts := []kgo.Opt{
		kgo.SeedBrokers(tg.seeds()...),
		kgo.WithContext(cctx),
		kgo.Dialer(ks.dial),
		kgo.TransactionalID(m.txnID),
		kgo.TransactionTimeout(txnTimeout),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second),
	}
	if os.Getenv(ClusterLogEnv) == "debug" {
		// The member's own account, for a failure's evidence.
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
			return time.Now().UTC().Format("15:04:05.000 ") + "member " + name + " "
		})))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		t.Fatalf("%s: member %s: %v", tg.name, name, err)
	}
	closed := make(chan struct{})
	t.Cleanup(func() {
		ccancel()
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Errorf("%s: member %s's client did not close within 30 s", tg.name, name)
		}
	})
	go func() {
		defer close(m.done)
		defer func() {
			go func() { sess.Close(); close(closed) }()
		}()
		for !m.stop.Load() {
			pctx, pcancel := context.WithTimeout(cctx, 200*time.Millisecond)
			fs := sess.PollRecords(pctx, 100)
			pcancel()
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					report(fmt.Errorf("member %s: fetching %s/%d: %w", name, topic, p, err))
				}
			})
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				report(fmt.Errorf("member %s: begin: %v", name, err))
				return
			}
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				n++
				sess.Produce(cctx, &kgo.Record{Topic: out, Key: r.Key, Value: append([]byte("etl:"), r.Value...)},
					func(_ *kgo.Record, err error) {
						if err != nil && !errors.Is(err, kgo.ErrAborting) && !m.crashAt.Load() {
							report(fmt.Errorf("member %s: transactional produce: %v", name, err))
						}
					})
			})
			if m.crashAt.Load() {
				// The crash: the records are in the output log, the
				// transaction and the group membership are left open.
				fctx, fcancel := context.WithTimeout(cctx, 10*time.Second)
				err := sess.Client().Flush(fctx)
				fcancel()
				if err != nil {
					report(fmt.Errorf("member %s: flush before the crash: %v", name, err))
				}
				m.flushedAtCrash.Store(int64(n))
				ks.kill()
				ccancel()
				return
			}
			ectx, ecancel := context.WithTimeout(cctx, 30*time.Second)
			committed, err := sess.End(ectx, kgo.TryCommit)
			ecancel()
			if err != nil {
				report(fmt.Errorf("member %s: ending a transaction: %w", name, err))
				// An EndTxn whose outcome is unconfirmed (its coordinator
				// died under it) leaves franz-go's client in the
				// transaction; its documented heal is End(TryAbort), which
				// re-runs InitProducerId at the current epoch and so
				// fences whatever the broker still has open.
				actx, acancel := context.WithTimeout(cctx, 30*time.Second)
				_, err := sess.End(actx, kgo.TryAbort)
				acancel()
				if err != nil {
					report(fmt.Errorf("member %s: aborting after a failed end: %w", name, err))
					return
				}
				continue
			}
			if committed {
				m.committed.Add(int64(n))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return m
}

// killSwitch is a dialer whose connections can all be cut at once, and
// every later dial refused: a client crash, as the broker sees it.
type killSwitch struct {
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

var errCrashed = errors.New("client crashed (test kill switch)")

func (k *killSwitch) dial(ctx context.Context, network, host string) (net.Conn, error) {
	k.mu.Lock()
	dead := k.dead
	k.mu.Unlock()
	if dead {
		return nil, errCrashed
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		c.Close()
		return nil, errCrashed
	}
	k.conns = append(k.conns, c)
	return c, nil
}

func (k *killSwitch) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for _, c := range k.conns {
		c.Close()
	}
}

// Package multinode runs several kiggy instances over one Iggy as one Kafka
// cluster (docs/design/cluster.md) and kills one under load.
package multinode

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/cluster"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/mapping"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/kclient"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Membership timing of the test instances: a timeout generous enough that
// a loaded 2-core machine's stalls (seen by hand: 3 s at load 16, with
// several JVMs) rarely expire a live instance, short enough for a fast
// test. A false expiry is safe (the lease) but would move partitions.
const (
	heartbeat = 200 * time.Millisecond
	timeout   = 2 * time.Second
)

// appends records every append each instance made: which partition, when
// it began and ended. Two instances' appends to one partition must never
// overlap in time.
type appends struct {
	mu   sync.Mutex
	list []appendSpan
}

type appendSpan struct {
	node       int32
	partition  int32
	start, end time.Time
}

// recordingLog is an instance's Iggy client with its appends recorded.
type recordingLog struct {
	*iggy.Client
	node int32
	rec  *appends
}

func (l *recordingLog) Append(ctx context.Context, topic string, partition int32, b *message.Batch) (int64, error) {
	start := time.Now()
	off, err := l.Client.Append(ctx, topic, partition, b)
	l.rec.mu.Lock()
	l.rec.list = append(l.rec.list, appendSpan{node: l.node, partition: partition, start: start, end: time.Now()})
	l.rec.mu.Unlock()
	return off, err
}

// overlaps returns the pairs of appends of different instances to one
// partition that were in flight at the same time.
func (a *appends) overlaps() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	byPart := map[int32][]appendSpan{}
	for _, s := range a.list {
		byPart[s.partition] = append(byPart[s.partition], s)
	}
	for p, spans := range byPart {
		slices.SortFunc(spans, func(x, y appendSpan) int { return x.start.Compare(y.start) })
		// The latest end so far of each node: a span overlapping another
		// node's still-open span is two leaders at once.
		ends := map[int32]time.Time{}
		for _, s := range spans {
			for n, e := range ends {
				if n != s.node && e.After(s.start) {
					out = append(out, fmt.Sprintf("partition %d: node %d appended at %v while node %d's append was in flight until %v",
						p, s.node, s.start.Format("15:04:05.000"), n, e.Format("15:04:05.000")))
				}
			}
			if s.end.After(ends[s.node]) {
				ends[s.node] = s.end
			}
		}
	}
	return out
}

// instance is one kiggy process, in-process: its own Iggy client, its
// membership, its gateway and engine on its own loopback port.
type instance struct {
	id   int32
	addr string
	log  *iggy.Client
	m    *cluster.Membership
	srv  *bridge.Server
	// peers is the instance's client to the others.
	peers *kclient.Pool
	done  chan error
}

// startIggytest starts an iggytest server on a free loopback port for the
// test's duration and returns its address.
func startIggytest(t testing.TB) string {
	isrv := iggytest.New(iggytest.Config{})
	a, err := isrv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(isrv.Close)
	return a.String()
}

// startInstance starts instance id over the Iggy at iggyAddr, listening on
// addr; each of mods may change its gateway's configuration first.
func startInstance(t testing.TB, iggyAddr string, id int32, addr string, rec *appends, mods ...func(*bridge.Config)) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("node %d: listen %s: %v", id, addr, err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	c, err := iggy.Open(ctx, iggy.Config{Addr: iggyAddr, RequestTimeout: 5 * time.Second, ReconnectBackoffMax: 200 * time.Millisecond,
		CommitTail: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("node %d: iggy: %v", id, err)
	}
	// The membership log switches generation every few seconds, so that
	// failover is proven across switches too (docs/design/cluster.md §2).
	m, err := cluster.Start(ctx, cluster.Config{NodeID: id, Log: c.SystemLog(), Topic: "members.kafka",
		Endpoints: []store.Endpoint{{Host: host, Port: int32(port)}}, Heartbeat: heartbeat, Timeout: timeout, CompactRecords: 25})
	if err != nil {
		t.Fatalf("node %d: membership: %v", id, err)
	}
	// The instances' requests to each other (transaction markers), as
	// cmd/kiggy's startPeers makes them.
	peers := kclient.New(kclient.Config{ClientID: "kiggy-" + strconv.Itoa(int(id)), DialTimeout: time.Second,
		Resolve: func(node int32) (string, bool) {
			for _, b := range m.Brokers() {
				if b.NodeID == node && len(b.Endpoints) > 0 {
					return net.JoinHostPort(b.Endpoints[0].Host, strconv.Itoa(int(b.Endpoints[0].Port))), true
				}
			}
			return "", false
		}})
	bcfg := bridge.Config{NodeID: id, InstanceID: uint16(id), Placement: m,
		Peers: peers, Logger: instanceLogger(id),
		Group: group.Config{MinSessionTimeout: time.Second, InitialRebalanceDelay: 100 * time.Millisecond}}
	for _, mod := range mods {
		mod(&bcfg)
	}
	srv, err := bridge.NewServer("", engine.Config{Logger: slog.New(slog.DiscardHandler)}, bcfg, &recordingLog{Client: c, node: id, rec: rec})
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{id: id, addr: ln.Addr().String(), log: c, m: m, srv: srv, peers: peers, done: make(chan error, 1)}
	go func() { in.done <- srv.Serve(ln) }()
	return in
}

// kill ends the instance as kill -9 would, as far as anyone else can tell:
// no leave record, heartbeats stop, the listener and every connection close
// at once with no drain, requests in flight to Iggy are cut off. (In
// process: a subprocess would need a kiggy build in the test and would hide
// the leader epochs the test checks.)
func (in *instance) kill() {
	in.m.Abandon()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no drain
	_ = in.srv.Shutdown(ctx)
	<-in.done
	_ = in.peers.Close()
	_ = in.log.Close()
}

// startPair starts two instances (nodes 1 and 2) over a fresh iggytest
// server, each of mods changing their gateways' configuration, creates
// topic with parts partitions and waits until both agree on its placement;
// they stop when t ends.
func startPair(t *testing.T, topic string, parts int32, mods ...func(*bridge.Config)) (n1, n2 *instance) {
	t.Helper()
	iggyAddr := startIggytest(t)
	rec := &appends{}
	n1 = startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec, mods...)
	t.Cleanup(n1.stop)
	n2 = startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec, mods...)
	t.Cleanup(n2.stop)
	if _, err := n1.log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, []*instance{n1, n2}, []int32{1, 2}, topic, parts)
	return n1, n2
}

func (in *instance) stop() {
	_ = in.m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = in.srv.Shutdown(ctx)
	<-in.done
	_ = in.peers.Close()
	_ = in.log.Close()
}

// instanceLogger is an instance's logger: discarded, or on stderr with
// KIGGY_TEST_LOG set.
func instanceLogger(id int32) *slog.Logger {
	if os.Getenv("KIGGY_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", id)
}

// watcher samples every live instance's placement and fails the test when
// a partition is served by two instances at once or an instance's leader
// epoch for a partition goes backwards.
type watcher struct {
	mu        sync.Mutex
	instances []*instance // nil = down
	last      map[[2]int32]int32
	errs      []string
	maxEpoch  map[int32]int32
}

func (w *watcher) set(i int, in *instance) {
	w.mu.Lock()
	w.instances[i] = in
	w.mu.Unlock()
}

func (w *watcher) sample(topic string, parts int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range parts {
		serving := []int32{}
		for _, in := range w.instances {
			if in == nil {
				continue
			}
			r := in.m.Leader(topic, p)
			if r.Serving {
				serving = append(serving, in.id)
			}
			k := [2]int32{in.id, p}
			if prev, ok := w.last[k]; ok && r.Epoch < prev && r.Epoch >= 0 {
				w.errs = append(w.errs, fmt.Sprintf("node %d: partition %d epoch went back %d → %d", in.id, p, prev, r.Epoch))
			}
			w.last[k] = r.Epoch
			w.maxEpoch[p] = max(w.maxEpoch[p], r.Epoch)
		}
		if len(serving) > 1 {
			w.errs = append(w.errs, fmt.Sprintf("partition %d served by %v at once", p, serving))
		}
	}
}

// waitSettled waits until the instances agree on live and every partition
// has exactly one server.
func waitSettled(t testing.TB, ins []*instance, live []int32, topic string, parts int32) {
	t.Helper()
	var err error
	settled := func() bool {
		err = func() error {
			for _, in := range ins {
				if _, l := in.m.View(); !slices.Equal(l, live) {
					return fmt.Errorf("node %d sees %v, want %v", in.id, l, live)
				}
			}
			for p := range parts {
				n := 0
				for _, in := range ins {
					if in.m.Leader(topic, p).Serving {
						n++
					}
				}
				if n != 1 {
					return fmt.Errorf("partition %d served by %d", p, n)
				}
			}
			return nil
		}()
		return err == nil
	}
	if !testtools.Eventually(15*time.Second, settled) {
		t.Fatal(err)
	}
}

// TestThreeInstancesFailover proves failover (docs/design/cluster.md): three instances
// over one iggytest, a steady idempotent franz-go producer and a 3-member
// consumer group bootstrapped from all three; the group's coordinator is
// killed abruptly and later restarted. Every acknowledged record is
// stored, none twice; the group consumes every record; the committed
// offsets read the same through every instance; no partition is ever
// served by two instances at once and no leader epoch goes backwards.
func TestThreeInstancesFailover(t *testing.T) {
	iggyAddr := startIggytest(t)
	const topic, parts, groupID = "mn", int32(6), "mn-group"

	rec := &appends{}
	ins := make([]*instance, 3)
	for i := range ins {
		ins[i] = startInstance(t, iggyAddr, int32(i+1), "127.0.0.1:0", rec)
	}
	defer func() {
		for _, in := range ins {
			if in != nil {
				in.stop()
			}
		}
	}()
	if _, err := ins[0].log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)

	w := &watcher{instances: slices.Clone(ins), last: map[[2]int32]int32{}, maxEpoch: map[int32]int32{}}
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			w.sample(topic, parts)
		}
	}()

	seeds := []string{ins[0].addr, ins[1].addr, ins[2].addr}
	common := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(50 * time.Millisecond), kgo.MetadataMaxAge(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.DialTimeout(time.Second)}

	// The consumer group: three members, manual commits after each poll.
	var seenMu sync.Mutex
	seen := map[string]int{}
	var consumed atomic.Int64
	cctx, ccancel := context.WithCancel(context.Background())
	var cwg sync.WaitGroup
	var members []*kgo.Client
	for range 3 {
		cl, err := kgo.NewClient(append(slices.Clone(common), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.RebalanceTimeout(5*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, cl)
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					seenMu.Lock()
					seen[string(r.Value)]++
					seenMu.Unlock()
					consumed.Add(1)
				})
				_ = cl.CommitUncommittedOffsets(cctx)
			}
		}()
	}

	// The producer: idempotent (franz-go's default), acks=all.
	prod, err := kgo.NewClient(append(slices.Clone(common), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(30*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	var ackMu sync.Mutex
	acked := map[string]bool{}
	var failed atomic.Int64
	pctx, pcancel := context.WithCancel(context.Background())
	var pwg sync.WaitGroup
	var lastAck atomic.Int64
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for i := 0; pctx.Err() == nil; i++ {
			v := "v" + strconv.Itoa(i)
			prod.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i % 17)), Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					return
				}
				ackMu.Lock()
				acked[string(r.Value)] = true
				ackMu.Unlock()
				lastAck.Store(time.Now().UnixNano())
			})
			time.Sleep(2 * time.Millisecond) // paces the load: a record every 2 ms throughout
		}
	}()
	ackedNow := func() int { ackMu.Lock(); defer ackMu.Unlock(); return len(acked) }
	// waitLoad waits until n more records are acknowledged and the group
	// consumed some: the load runs across the step before the next.
	waitLoad := func(n int, what string) {
		t.Helper()
		from, read := ackedNow(), consumed.Load()
		testtools.WaitFor(t, 30*time.Second, what, func() bool { return ackedNow() >= from+n && consumed.Load() > read })
	}

	waitLoad(300, "300 records acknowledged and consumed before the kill")
	// Kill the group's coordinator: its partitions and the group move.
	coord, _ := ins[0].m.Coordinator(groupID)
	k := int(coord - 1)
	killedAddr := ins[k].addr
	killedAt := time.Now()
	ins[k].kill()
	w.set(k, nil)
	ins[k] = nil
	var survivors []*instance
	var survivorIDs []int32
	for _, in := range ins {
		if in != nil {
			survivors = append(survivors, in)
			survivorIDs = append(survivorIDs, in.id)
		}
	}
	waitSettled(t, survivors, survivorIDs, topic, parts)
	settledAfter := time.Since(killedAt)
	waitLoad(300, "300 more records acknowledged and consumed after the survivors settled")
	ins[k] = startInstance(t, iggyAddr, coord, killedAddr, rec)
	w.set(k, ins[k])
	waitSettled(t, ins, []int32{1, 2, 3}, topic, parts)
	waitLoad(300, "300 more records acknowledged and consumed after the restart")
	pcancel()
	pwg.Wait()
	if err := prod.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	ackMu.Lock()
	nAcked := len(acked)
	ackMu.Unlock()
	t.Logf("acknowledged %d, failed %d; survivors settled %v after the kill; membership log generation %d", nAcked, failed.Load(), settledAfter.Round(time.Millisecond), ins[0].m.Generation())
	if ins[0].m.Generation() == 0 {
		t.Errorf("the membership log never switched generation (a switch every 25 records)")
	}

	// Every acknowledged record is stored, none twice.
	stored := map[string]int{}
	var hw [parts]int64
	for p := range parts {
		var dec mapping.Decoder
		next := int64(0)
		for {
			n := 0
			wm, err := ins[0].log.Read(context.Background(), topic, p, next, 4<<20, func(m *message.Message) bool {
				var r mapping.Record
				if err := dec.Decode(m, &r); err == nil {
					stored[string(r.Value)]++
				}
				next, n = m.Offset+1, n+1
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			// Read on until a read returns nothing: a read served from this
			// instance's read cache reports the high watermark of the poll
			// that filled it, which other instances' appends may have passed
			// (docs/IGGY.md "The read cache and read-ahead").
			if n == 0 {
				hw[p] = max(wm.High, next)
				break
			}
		}
	}
	dups := 0
	for v, n := range stored {
		if n > 1 {
			dups++
			if dups < 5 {
				t.Errorf("record %s stored %d times", v, n)
			}
		}
	}
	ackMu.Lock()
	for v := range acked {
		if stored[v] == 0 {
			t.Errorf("acknowledged record %s is not stored", v)
		}
	}
	ackMu.Unlock()

	// The group finishes every stored record.
	missing := 0
	if !testtools.Eventually(30*time.Second, func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		missing = 0
		for v := range stored {
			if seen[v] == 0 {
				missing++
			}
		}
		return missing == 0
	}) {
		t.Fatalf("the group has not consumed %d of %d stored records", missing, len(stored))
	}

	// Committed offsets reach the high watermarks and read the same through
	// every instance: through each one's own commit log view, and through
	// Kafka OffsetFetch bootstrapped from each instance alone.
	var committedErr error
	if !testtools.Eventually(15*time.Second, func() bool {
		committedErr = func() error {
			for _, in := range ins {
				for p := range parts {
					off, _, ok, err := in.log.FetchOffset(context.Background(), groupID, topic, p)
					if err != nil || !ok || off != hw[p] {
						return fmt.Errorf("node %d: partition %d committed %d %v %v, want %d", in.id, p, off, ok, err, hw[p])
					}
				}
				adm, err := kgo.NewClient(kgo.SeedBrokers(in.addr))
				if err != nil {
					return err
				}
				resp, err := kadm.NewClient(adm).FetchOffsets(context.Background(), groupID)
				adm.Close()
				if err != nil {
					return fmt.Errorf("node %d: OffsetFetch: %v", in.id, err)
				}
				for p := range parts {
					o, ok := resp.Lookup(topic, p)
					if !ok || o.Err != nil || o.At != hw[p] {
						return fmt.Errorf("node %d: OffsetFetch partition %d = %+v, want %d", in.id, p, o, hw[p])
					}
				}
			}
			return nil
		}()
		return committedErr == nil
	}) {
		t.Fatal(committedErr)
	}
	ccancel()
	cwg.Wait()
	for _, cl := range members {
		cl.Close()
	}
	close(stopWatch)
	<-watchDone
	w.mu.Lock()
	for i, e := range w.errs {
		if i < 10 {
			t.Error(e)
		}
	}
	t.Logf("highest leader epochs seen: %v", w.maxEpoch)
	w.mu.Unlock()
	for i, e := range rec.overlaps() {
		if i < 10 {
			t.Error(e)
		}
	}
	rec.mu.Lock()
	t.Logf("%d appends checked for overlap", len(rec.list))
	rec.mu.Unlock()
}

// TestIdempotentProducerAcrossMoves: a partition moves from node 1 to node
// 2 and back while one idempotent producer writes to it. Node 2 rebuilds
// the producer's sequence window from the partition's tail, and node 1,
// whose window is stale on the way back, rebuilds it too (the leader epoch
// changed): every batch is acknowledged, none stored twice, none refused
// as out of order.
func TestIdempotentProducerAcrossMoves(t *testing.T) {
	iggyAddr := startIggytest(t)
	rec := &appends{}
	const topic, parts = "moves", int32(16)
	n1 := startInstance(t, iggyAddr, 1, "127.0.0.1:0", rec)
	defer n1.stop()
	if _, err := n1.log.CreateTopic(context.Background(), topic, parts, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, []*instance{n1}, []int32{1}, topic, parts)
	n2 := startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec)
	waitSettled(t, []*instance{n1, n2}, []int32{1, 2}, topic, parts)
	p := int32(-1)
	for i := range parts {
		if n1.m.Leader(topic, i).Leader == 2 {
			p = i
			break
		}
	}
	if p < 0 {
		t.Fatal("no partition moved to node 2")
	}
	// Node 2 leaves; the producer starts on node 1, node 2 comes back and
	// takes the partition, then leaves again.
	n2.stop()
	waitSettled(t, []*instance{n1}, []int32{1}, topic, parts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.MetadataMaxAge(300*time.Millisecond), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := 0
	produce := func(what string) {
		t.Helper()
		for range 20 {
			r := &kgo.Record{Partition: p, Value: []byte("r" + strconv.Itoa(produced))}
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Fatalf("%s: record %d: %v", what, produced, err)
			}
			produced++
		}
	}
	produce("on node 1")
	n2 = startInstance(t, iggyAddr, 2, "127.0.0.1:0", rec)
	waitSettled(t, []*instance{n1, n2}, []int32{1, 2}, topic, parts)
	produce("moved to node 2")
	n2.stop()
	waitSettled(t, []*instance{n1}, []int32{1}, topic, parts)
	produce("back on node 1")
	wm, err := n1.log.Watermarks(context.Background(), topic, p)
	if err != nil || wm.High != int64(produced) {
		t.Fatalf("partition %d holds %d records (%v), want %d", p, wm.High, err, produced)
	}
	// One producer id and epoch throughout: no instance refused a batch as
	// out of order (franz-go would have bumped the epoch and gone on).
	stamps := map[[2]int64]int{}
	if _, err := n1.log.Read(context.Background(), topic, p, 0, 4<<20, func(m *message.Message) bool {
		if st, ok := mapping.FindProducer(m.Headers); ok {
			stamps[[2]int64{st.ID, int64(st.Epoch)}]++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(stamps) != 1 {
		t.Fatalf("producer (id, epoch) stamps %v: want one pair", stamps)
	}
}

package iggy

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

func equalState(a, b map[string][]byte) bool { return maps.EqualFunc(a, b, bytes.Equal) }

// TestSystemStoreSurvivesRestart: entries put and deleted through one client
// read back the same through a client opened after it closed, and after an
// iggy-server crash (each change is a written record before PutSystem
// returns); namespaces and Kafka streams are kept apart.
func TestSystemStoreSurvivesRestart(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	cx := ctx(t)
	c := open(t, Config{Addr: addr, PoolSize: 2})
	if got, err := c.LoadSystem(cx, "acl"); err != nil || len(got) != 0 {
		t.Fatalf("empty namespace: %v %v", got, err)
	}
	puts := []struct{ ns, key, value string }{
		{"acl", "a", "1"}, {"acl", "b", "2"}, {"acl", "a", "3"}, {"scram", "SCRAM-SHA-256/alice", "salted"},
		{"acl", "gone", "x"},
	}
	for _, p := range puts {
		if err := c.PutSystem(cx, p.ns, p.key, []byte(p.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutSystem(cx, "acl", "gone", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.PutSystem(cx, "acl", "empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]byte{
		"acl":   {"a": []byte("3"), "b": []byte("2"), "empty": {}},
		"scram": {"SCRAM-SHA-256/alice": []byte("salted")},
	}
	check := func(what string, c *Client) {
		t.Helper()
		for ns, w := range want {
			got, err := c.LoadSystem(cx, ns)
			if err != nil || !equalState(got, w) {
				t.Errorf("%s: %s = %q %v, want %q", what, ns, got, err, w)
			}
		}
	}
	check("same client", c)
	c.Close()
	c2 := open(t, Config{Addr: addr, PoolSize: 1})
	check("after a restart", c2)
	other := open(t, Config{Addr: addr, PoolSize: 1, Stream: "other"})
	if got, err := other.LoadSystem(cx, "acl"); err != nil || len(got) != 0 {
		t.Errorf("another Kafka stream sees %q %v", got, err)
	}
	c2.Close()
	srv.Crash()
	if _, err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	c3 := open(t, Config{Addr: addr, PoolSize: 1})
	check("after an iggy-server crash", c3)
	for _, bad := range []string{"", "UPPER", "a.b", strings.Repeat("n", 33)} {
		if _, err := c3.LoadSystem(cx, bad); err == nil {
			t.Errorf("namespace %q accepted", bad)
		}
	}
	if err := c3.PutSystem(cx, "acl", "", []byte("v")); err == nil {
		t.Error("an empty key accepted")
	}
}

// TestSystemStoreSharedByInstances: a change made through one client shows
// up at the next load through another client of the same stream, including
// after the other one compacted the namespace into a new generation.
func TestSystemStoreSharedByInstances(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	// Instances of one stream, with no compactor: the namespace grows.
	a := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	b := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, noCompactor: true})
	if err := a.PutSystem(cx, "log-start", "t/0", []byte{7}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.LoadSystem(cx, "log-start"); !equalState(got, map[string][]byte{"t/0": {7}}) {
		t.Fatalf("b reads %q", got)
	}
	for i := range 50 {
		if err := b.PutSystem(cx, "log-start", "t/1", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]byte{"t/0": {7}, "t/1": {49}}
	if got, _ := a.LoadSystem(cx, "log-start"); !equalState(got, want) {
		t.Fatalf("a reads %q, want %q", got, want)
	}
	// A third client compacts the namespace (51 records, 2 live) into
	// generation 1 and deletes generation 0, which a is still reading.
	sys := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: DefaultSystemStream, PoolSize: 1, system: true})
	gens := func() string {
		list, err := sys.Topics(cx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tp := range list {
			if strings.HasPrefix(tp.Name, "state."+stream+".") {
				out = append(out, tp.Name)
			}
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	if got := gens(); got != stateTopicPrefix(stream, "log-start")+"0" {
		t.Fatalf("generations before: %s", got)
	}
	// A third instance, of the same cluster, opens the namespace and its
	// compactor compacts it.
	c := open(t, Config{compactMin: 20, compactRatio: 2, Addr: addr, Stream: stream, PoolSize: 1, CommitTail: time.Hour})
	if got, _ := c.LoadSystem(cx, "log-start"); !equalState(got, want) {
		t.Fatalf("c reads %q", got)
	}
	var got string
	if !testtools.Eventually(10*time.Second, func() bool {
		got = gens()
		return got == stateTopicPrefix(stream, "log-start")+"1"
	}) {
		t.Fatalf("generations after compaction: %s", got)
	}
	if got, _ := c.LoadSystem(cx, "log-start"); !equalState(got, want) {
		t.Fatalf("after compaction: %q", got)
	}
	if err := c.PutSystem(cx, "log-start", "t/2", []byte{9}); err != nil {
		t.Fatal(err)
	}
	want["t/2"] = []byte{9}
	if got, err := a.LoadSystem(cx, "log-start"); err != nil || !equalState(got, want) {
		t.Fatalf("a after the compaction elsewhere: %q %v, want %q", got, err, want)
	}
	if err := a.PutSystem(cx, "log-start", "t/0", nil); err != nil {
		t.Fatal(err)
	}
	delete(want, "t/0")
	if got, _ := c.LoadSystem(cx, "log-start"); !equalState(got, want) {
		t.Fatalf("c reads %q, want %q", got, want)
	}
}

// TestSystemStoreConcurrentWriters: two instances putting at once, each
// change landing between the other's catch-up and its append, both end up
// with every change. (An instance that advanced past its own append once
// skipped the other's records before it, for good: seen as a gateway
// cluster's classic groups missing from one instance's view.)
func TestSystemStoreConcurrentWriters(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	b := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	const n = 150
	want := map[string][]byte{}
	errs := make(chan error, 2)
	for name, c := range map[string]*Client{"a": a, "b": b} {
		for i := range n {
			want[name+strconv.Itoa(i)] = []byte{byte(i)}
		}
		go func() {
			for i := range n {
				if err := c.PutSystem(cx, "race", name+strconv.Itoa(i), []byte{byte(i)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]*Client{"a": a, "b": b} {
		got, err := c.LoadSystem(cx, "race")
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for k := range want {
			if got[k] == nil {
				missing = append(missing, k)
			}
		}
		if len(missing) != 0 || !equalState(got, want) {
			slices.Sort(missing)
			t.Errorf("%s misses %d of %d entries: %v", name, len(missing), len(want), missing)
		}
	}
}

// TestSystemStoreWithoutSystemStream: a client opened without the system
// stream says so instead of keeping state nowhere.
func TestSystemStoreWithoutSystemStream(t *testing.T) {
	_, addr := startServer(t, iggytest.Config{})
	c := open(t, Config{Addr: addr, PoolSize: 1, noCommitLog: true})
	if err := c.PutSystem(ctx(t), "acl", "k", []byte("v")); err == nil {
		t.Fatal("PutSystem without a system stream succeeded")
	}
	var _ store.SystemStore = c
}

func FuzzStateRecord(f *testing.F) {
	f.Add(appendStateRecord(nil, stateRecord{kind: statePut, key: "k", value: []byte("v")}))
	f.Add(appendStateRecord(nil, stateRecord{kind: stateDelete, key: "k"}))
	f.Add(appendStateRecord(nil, stateRecord{kind: stateComplete}))
	f.Add(appendStateRecord(nil, stateRecord{kind: stateSwitch}))
	f.Add([]byte{1, 1, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := decodeStateRecord(p)
		if err != nil {
			return
		}
		if got := appendStateRecord(nil, r); !bytes.Equal(got, p) {
			t.Fatalf("round trip: %x → %+v → %x", p, r, got)
		}
	})
}

// TestSystemStorePutAll: PutSystemAll's entries (puts and a delete) are
// one change another instance and a new client read whole, after the
// server is killed (SIGKILL for a real iggy-server, a crash of the model)
// and restarted too; an entry too large for the store fails the change
// before anything is stored.
func TestSystemStorePutAll(t *testing.T) {
	var kill func()
	addr, stream := "", "kafka"
	switch {
	case os.Getenv(envAddr) != "":
		addr, stream = target(t)
	case realServer(t):
		node := iggyserver.StartT(t)
		addr = node.Addr
		kill = func() {
			node.Kill()
			if err := node.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	default:
		var srv *iggytest.Server
		srv, addr = startServer(t, iggytest.Config{})
		kill = func() {
			srv.Crash()
			if _, err := srv.Start(addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	cx := ctx(t)
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	b := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	if err := a.PutSystem(cx, "client-quotas", "old", []byte{1}); err != nil {
		t.Fatal(err)
	}
	all := []store.SystemEntry{{Key: "x", Value: []byte{2}}, {Key: "y", Value: []byte{}}, {Key: "old"}, {Key: "z", Value: []byte("3")}}
	if err := a.PutSystemAll(cx, "client-quotas", all); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"x": {2}, "y": {}, "z": []byte("3")}
	if got, err := b.LoadSystem(cx, "client-quotas"); err != nil || !equalState(got, want) {
		t.Fatalf("the other instance reads %q %v, want %q", got, err, want)
	}
	tooLarge := []store.SystemEntry{{Key: "w", Value: []byte{9}}, {Key: strings.Repeat("k", maxStateKey+1), Value: []byte{1}}}
	if err := b.PutSystemAll(cx, "client-quotas", tooLarge); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("an oversized key: %v, want ErrTooLarge", err)
	}
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	if got, err := c.LoadSystem(cx, "client-quotas"); err != nil || !equalState(got, want) {
		t.Fatalf("a new client reads %q %v, want %q (nothing of the refused change)", got, err, want)
	}
	if kill == nil {
		return // a shared server named by the environment is not ours to kill
	}
	a.Close()
	b.Close()
	c.Close()
	kill()
	// A real server restarted over a killed one's data may refuse the
	// first connections while it loads.
	var d *Client
	testtools.WaitFor(t, 30*time.Second, "a client of the restarted server", func() bool {
		var err error
		d, err = Open(cx, Config{Addr: addr, Stream: stream, PoolSize: 1, Logger: quiet,
			Username: iggyserver.Username, Password: iggyserver.Password})
		return err == nil
	})
	t.Cleanup(func() { d.Close() })
	if got, err := d.LoadSystem(cx, "client-quotas"); err != nil || !equalState(got, want) {
		t.Fatalf("after the server was killed, a new client reads %q %v, want %q", got, err, want)
	}
}

// TestSystemVersion: a namespace's version changes when another client
// writes it and stays when nothing was written or when the client wrote it
// itself, so a gateway re-reads shared state only when another changed it.
func TestSystemVersion(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	b := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	version := func(c *Client) uint64 {
		t.Helper()
		v, err := c.SystemVersion(cx, "versions")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	va, vb := version(a), version(b)
	if v := version(b); v != vb {
		t.Errorf("nothing written: b's version moved from %d to %d", vb, v)
	}
	if err := a.PutSystem(cx, "versions", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if v := version(a); v != va {
		t.Errorf("a's own write moved a's version from %d to %d", va, v)
	}
	vb2 := version(b)
	if vb2 == vb {
		t.Fatalf("a's write did not move b's version (%d)", vb)
	}
	if err := b.PutSystemAll(cx, "versions", []store.SystemEntry{{Key: "k"}, {Key: "j", Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if v := version(b); v != vb2 {
		t.Errorf("b's own write moved b's version from %d to %d", vb2, v)
	}
	if v := version(a); v == va {
		t.Errorf("b's write did not move a's version (%d)", va)
	}
	got, err := a.LoadSystem(cx, "versions")
	if err != nil {
		t.Fatal(err)
	}
	if !equalState(got, map[string][]byte{"j": []byte("2")}) {
		t.Errorf("a reads %q after b's write", got)
	}
}

// TestSystemStoreReadCreatesNothing: reading a namespace nobody wrote
// creates no topic in Iggy (so a gateway that only reads one, as every
// gateway reads the SCRAM credentials, writes nothing, not even during an
// Iggy cluster's failover); another instance's first write to it shows up
// at the reader's next look; and a generation 0 whose creator died before
// its "complete" record reads as empty until a write gives it up and makes
// generation 1.
func TestSystemStoreReadCreatesNothing(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	a := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1, stateTakeover: 100 * time.Millisecond})
	b := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	got, err := a.LoadSystem(cx, "lazy")
	if err != nil || len(got) != 0 {
		t.Fatalf("a namespace nobody wrote: %q %v", got, err)
	}
	v0, err := a.SystemVersion(cx, "lazy")
	if err != nil {
		t.Fatal(err)
	}
	lazy := stateTopicPrefix(stream, "lazy")
	if g := generationsOf(t, addr, lazy); len(g) != 0 {
		t.Fatalf("reading the namespace created %s", g)
	}
	if err := b.PutSystem(cx, "lazy", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if g := generationsOf(t, addr, lazy); !slices.Equal(g, []string{lazy + "0"}) {
		t.Fatalf("after the first write: %q", g)
	}
	if v, err := a.SystemVersion(cx, "lazy"); err != nil || v == v0 {
		t.Fatalf("b's first write did not move a's version (%d → %d, %v)", v0, v, err)
	}
	if got, err := a.LoadSystem(cx, "lazy"); err != nil || !equalState(got, map[string][]byte{"k": []byte("1")}) {
		t.Fatalf("a reads %q %v after b's first write", got, err)
	}

	// A creation cut short: generation 0 made, a put copied into it, no
	// "complete" record (its creator died).
	half := stateTopicPrefix(stream, "half")
	sys := open(t, Config{Addr: addr, Stream: DefaultSystemStream, PoolSize: 1, system: true})
	if _, err := sys.CreateTopic(cx, half+"0", 1, store.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	var batch message.Batch
	batch.Reset(uint64(time.Now().UnixMicro()))
	addStateRecord(&batch, stateRecord{kind: statePut, key: "partial", value: []byte("0")})
	if _, err := sys.Append(cx, half+"0", 0, &batch); err != nil {
		t.Fatal(err)
	}
	if got, err := a.LoadSystem(cx, "half"); err != nil || len(got) != 0 {
		t.Fatalf("an incomplete generation reads as %q %v", got, err)
	}
	if g := generationsOf(t, addr, half); !slices.Equal(g, []string{half + "0"}) {
		t.Fatalf("a read of the incomplete generation left %q", g)
	}
	if err := a.PutSystem(cx, "half", "x", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if g := generationsOf(t, addr, half); !slices.Equal(g, []string{half + "1"}) {
		t.Fatalf("the write left %q, want %s1", g, half)
	}
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 1})
	if got, err := c.LoadSystem(cx, "half"); err != nil || !equalState(got, map[string][]byte{"x": []byte("2")}) {
		t.Fatalf("a fresh client reads %q %v, want only x", got, err)
	}
}

// TestSystemStoreWriteFailureReported: a write whose append Iggy refuses
// returns the error, whether it is the namespace's first (its generation
// 0 made and its copy refused) or an append to one that exists, and
// nothing is stored; the next write, Iggy answering again, is stored. (A
// write once answered nil whenever its generation could not be made: a
// client's change acknowledged and lost, seen as a client quota altered
// during an Iggy cluster's failover and missing after.)
func TestSystemStoreWriteFailureReported(t *testing.T) {
	srv, addr := startServer(t, iggytest.Config{})
	cx := ctx(t)
	c := open(t, Config{Addr: addr, PoolSize: 1, stateTakeover: 50 * time.Millisecond})
	refuse := func(n int) {
		srv.InjectFault(iggytest.Fault{Op: proto.OpSendMessages, Status: uint32(proto.CodeError), Count: n})
	}
	// The copy into generation 0 and the switch that gives it up.
	refuse(2)
	if err := c.PutSystem(cx, "fails", "first", []byte("1")); err == nil {
		t.Fatal("the first write of a namespace whose generation 0 Iggy refused: nil error")
	}
	if n := srv.PendingFaults(); n != 0 {
		t.Fatalf("%d refusals left: the write did not try what the test expects", n)
	}
	if err := c.PutSystem(cx, "fails", "second", []byte("2")); err != nil {
		t.Fatal(err)
	}
	refuse(1)
	if err := c.PutSystem(cx, "fails", "third", []byte("3")); err == nil {
		t.Fatal("a write Iggy refused: nil error")
	}
	fresh := open(t, Config{Addr: addr, PoolSize: 1})
	want := map[string][]byte{"second": []byte("2")}
	if got, err := fresh.LoadSystem(cx, "fails"); err != nil || !equalState(got, want) {
		t.Fatalf("stored: %q %v, want %q", got, err, want)
	}
}

// TestSystemStoreWaitsOutRefusals: appends refused with nothing stored
// everywhere (58 TransientNotAccepted from every live node, as an Iggy 0.9
// cluster that lost a node answers for seconds to a topic created after
// the loss, its partition's primary the dead node) are tried again until
// one is taken: a namespace's first write succeeds once the partition has
// a live primary, a second after its refusals began.
func TestSystemStoreWaitsOutRefusals(t *testing.T) {
	cl := startCluster(t, 3)
	c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, RequestTimeout: 2 * time.Second})
	cx := ctx(t)
	refuseForASecond(cl, stateTopicPrefix("kafka", "refused")+"0") // the default stream's
	if err := c.PutSystem(cx, "refused", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if cl.Refusals(0)+cl.Refusals(1) == 0 {
		t.Fatal("no append was refused: the test did not test")
	}
	fresh := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1})
	if got, err := fresh.LoadSystem(cx, "refused"); err != nil || !equalState(got, map[string][]byte{"k": []byte("v")}) {
		t.Fatalf("stored: %q %v", got, err)
	}
}

// TestSystemStoreNamespacesWaitApart: while a write to one namespace waits
// on Iggy (held here before its append, as a refused append waited out or a
// compaction's copy holds it), the other namespaces are read, written and
// opened; only the waiting namespace's own readers wait, and get the write.
// (With one lock for the whole store, the state refresher's read of every
// namespace timed out behind a client quota write that waited 5.6 s for an
// Iggy cluster's new partition primary: tests/realiggy
// TestSystemStoreWriteDuringIggyFailover.)
func TestSystemStoreNamespacesWaitApart(t *testing.T) {
	addr, stream := target(t)
	cx := ctx(t)
	held := stateTopicPrefix(stream, "held")
	entered, release := make(chan struct{}), make(chan struct{})
	c := open(t, Config{Addr: addr, Stream: stream, PoolSize: 4, noCompactor: true, beforeStateAppend: func(topic string) {
		if strings.HasPrefix(topic, held) {
			close(entered)
			<-release
		}
	}})
	if err := c.PutSystem(cx, "other", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { wrote <- c.PutSystem(cx, "held", "k", []byte("v")) }()
	<-entered
	heldRead := make(chan map[string][]byte, 1)
	go func() {
		got, err := c.LoadSystem(cx, "held")
		if err != nil {
			t.Error(err)
		}
		heldRead <- got
	}()
	// A namespace opened before, and one opened now, while "held" waits;
	// a deadlock here fails the test at its timeout.
	if err := c.PutSystem(cx, "other", "k", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.LoadSystem(cx, "other"); err != nil || !equalState(got, map[string][]byte{"k": []byte("2")}) {
		t.Fatalf("other while held waits: %q %v", got, err)
	}
	if got, err := c.LoadSystem(cx, "fresh"); err != nil || len(got) != 0 {
		t.Fatalf("a namespace opened while held waits: %q %v, want it empty", got, err)
	}
	select {
	case got := <-heldRead:
		t.Fatalf("held's read returned %q while its write waited", got)
	default:
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got := <-heldRead; !equalState(got, map[string][]byte{"k": []byte("v")}) {
		t.Fatalf("held's reader, after the write: %q, want k=v", got)
	}
}

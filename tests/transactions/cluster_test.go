package transactions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// ClusterLogEnv sets the --log-level of the kiggy cluster's instances
// ("info" when unset; "debug" for a failure's evidence).
const ClusterLogEnv = "KIGGY_TXN_CLUSTER_LOG"

// kiggyCluster is a kiggy cluster of processes: n instances of ./cmd/kiggy
// (node ids 1..n, --cluster-membership iggy) over one real iggy-server,
// each on its own address, which kill ends with SIGKILL and starts again
// on the same address over the same Iggy.
type kiggyCluster struct {
	t     *testing.T
	tg    target   // bootstrap: every instance's address
	addrs []string // node id i+1's address
	args  func(node int32) []string

	mu    sync.Mutex
	procs []*kiggyproc.Proc // the running process of node id i+1
	all   []*kiggyproc.Proc // every process started, for the logs
}

// kiggyOnly skips t when TargetEnv leaves kiggy out: the cluster tests
// have no Kafka side (the single-broker tests run the same assertions on
// Kafka).
func kiggyOnly(t *testing.T) {
	t.Helper()
	if !slices.Contains(targets(t), "kiggy") {
		t.Skipf("skipping: a kiggy-only test and %s=%s", TargetEnv, os.Getenv(TargetEnv))
	}
}

// killableKiggyCluster starts n kiggy processes as one cluster over a
// fresh iggy-server (fast membership: a heartbeat every 200 ms, dead after
// 2 s) and returns once every instance answers and its Metadata lists
// all n brokers. When t fails, the end of every process's log
// is printed; the whole logs are copied to $KIGGY_TXN_CLUSTER_LOGS, a
// directory, when that is set.
func killableKiggyCluster(t *testing.T, n int) *kiggyCluster {
	t.Helper()
	iggy := iggyserver.StartT(t)
	kiggyproc.Binary(t)
	level := os.Getenv(ClusterLogEnv)
	if level == "" {
		level = "info"
	}
	c := &kiggyCluster{t: t}
	for range n {
		c.addrs = append(c.addrs, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	c.args = func(id int32) []string {
		return []string{
			"--listen", c.addrs[id-1], "--admin-addr", "", "--drain-timeout", "2s",
			"--iggy-addr", iggy.Addr, "--iggy-username", iggyserver.Username, "--iggy-password", iggyserver.Password,
			"--cluster-membership", "iggy", "--node-id", fmt.Sprint(id),
			"--membership-heartbeat", "200ms", "--membership-timeout", "2s",
			"--log-level", level,
		}
	}
	t.Cleanup(c.dumpLogs)
	c.procs = make([]*kiggyproc.Proc, n)
	for i := range n {
		c.procs[i] = c.startFirst(int32(i + 1))
	}
	c.tg = target{name: "kiggy", addr: strings.Join(c.addrs, ",")}
	for id := range int32(n) {
		c.waitServing(id + 1)
	}
	return c
}

// start starts node id's process (a new incarnation on the node's address).
func (c *kiggyCluster) start(id int32) *kiggyproc.Proc {
	p, err := c.tryStart(id)
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// startFirst starts node id's first incarnation. Its port was free when
// freePort chose it, but may be taken before kiggy binds it (it binds after
// connecting to Iggy; an outgoing connection's ephemeral port can be it):
// then the node gets another port and starts again.
func (c *kiggyCluster) startFirst(id int32) *kiggyproc.Proc {
	for attempt := 1; ; attempt++ {
		p, err := c.tryStart(id)
		if err == nil {
			return p
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			c.t.Fatal(err)
		}
		c.t.Logf("kiggy node %d: %s taken at start; trying another port", id, c.addrs[id-1])
		c.addrs[id-1] = fmt.Sprintf("127.0.0.1:%d", freePort(c.t))
	}
}

// tryStart starts node id's process, or returns why it exited at start.
func (c *kiggyCluster) tryStart(id int32) (*kiggyproc.Proc, error) {
	c.mu.Lock()
	name := fmt.Sprintf("kiggy%d-%d", id, len(c.all))
	c.mu.Unlock()
	p, err := kiggyproc.TryStart(c.t, kiggyproc.Config{Name: name, Args: c.args(id)})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.all = append(c.all, p)
	c.mu.Unlock()
	return p, nil
}

// waitServing waits until node id answers and its Metadata lists every
// instance of the cluster.
func (c *kiggyCluster) waitServing(id int32) {
	c.t.Helper()
	addr := c.addrs[id-1]
	if err := testtools.ProbeKafka(addr, 30*time.Second); err != nil {
		c.t.Fatalf("kiggy node %d at %s is not answering: %v\n%s", id, addr, err, c.proc(id).Tail(20))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	var brokers []int32
	if !testtools.EventuallyEvery(30*time.Second, 100*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Through this node: its seed broker, not whichever broker the
		// client learnt of.
		resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		if err != nil {
			return false
		}
		brokers = brokers[:0]
		for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
			brokers = append(brokers, b.NodeID)
		}
		return len(brokers) == len(c.addrs)
	}) {
		c.t.Fatalf("Metadata through kiggy node %d lists brokers %v after 30 s, want %d\n%s", id, brokers, len(c.addrs), c.proc(id).Tail(20))
	}
}

func (c *kiggyCluster) proc(id int32) *kiggyproc.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[id-1]
}

// kill ends node id's process with SIGKILL, waits down (1 s: the instance
// is back before the others' timeout and takes its own ids, partitions
// and groups back from the store; 3 s: the others take them over first)
// and starts it again on the same address, then waits until it serves
// and lists every instance again.
func (c *kiggyCluster) kill(id int32, down time.Duration) {
	c.t.Helper()
	c.proc(id).Kill()
	time.Sleep(down)
	p := c.start(id)
	c.mu.Lock()
	c.procs[id-1] = p
	c.mu.Unlock()
	c.waitServing(id)
}

// admin is an admin client of the whole cluster, for one call.
func (c *kiggyCluster) admin() (*kadm.Client, func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		c.t.Fatal(err)
	}
	return kadm.NewClient(cl), cl.Close
}

// coordinator returns the node that coordinates a transactional id (txn)
// or a group (FindCoordinator key type 1 or 0).
func (c *kiggyCluster) coordinator(key string, txn bool) int32 {
	c.t.Helper()
	adm, done := c.admin()
	defer done()
	var last error
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var rs kadm.FindCoordinatorResponses
		if txn {
			rs = adm.FindTxnCoordinators(ctx, key)
		} else {
			rs = adm.FindGroupCoordinators(ctx, key)
		}
		cancel()
		r, ok := rs[key]
		if ok && r.Err == nil {
			return r.NodeID
		}
		last = r.Err
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("FindCoordinator of %q (transactional %v): %v", key, txn, last)
	return 0
}

// leaders returns how many partitions of topics each node leads.
func (c *kiggyCluster) leaders(topics ...string) map[int32]int {
	c.t.Helper()
	adm, done := c.admin()
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx, topics...)
	if err != nil {
		c.t.Fatalf("Metadata of %v: %v", topics, err)
	}
	out := map[int32]int{}
	for _, td := range m.Topics {
		for _, pd := range td.Partitions {
			out[pd.Leader]++
		}
	}
	return out
}

// busiest returns the node leading the most partitions of topics, other
// than the nodes of not (the lowest id on a tie).
func (c *kiggyCluster) busiest(not []int32, topics ...string) (int32, map[int32]int) {
	ls := c.leaders(topics...)
	best := int32(-1)
	for id := range int32(len(c.addrs)) {
		id++
		if slices.Contains(not, id) {
			continue
		}
		if best < 0 || ls[id] > ls[best] {
			best = id
		}
	}
	return best, ls
}

// dumpLogs prints the end of every process's log when the test failed,
// and copies the whole logs to $KIGGY_TXN_CLUSTER_LOGS when that is set.
func (c *kiggyCluster) dumpLogs() {
	c.mu.Lock()
	all := slices.Clone(c.all)
	c.mu.Unlock()
	dir := os.Getenv("KIGGY_TXN_CLUSTER_LOGS")
	if dir != "" {
		dir = filepath.Join(dir, c.t.Name())
	}
	for _, p := range all {
		if c.t.Failed() {
			c.t.Logf("--- %s (pid %d) log tail:\n%s", p.Name, p.Pid, p.Tail(25))
		}
		if dir != "" {
			b, err := os.ReadFile(p.Log)
			if err == nil {
				err = os.MkdirAll(dir, 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, p.Name+".log"), b, 0o644)
			}
			if err != nil {
				c.t.Logf("keeping %s's log: %v", p.Name, err)
			}
		}
	}
	if dir != "" {
		c.t.Logf("the kiggy processes' logs are in %s", dir)
	}
}

// TestTxnCopierClusterKill is TestTxnCopierKill on a kiggy cluster of
// three processes (--cluster-membership iggy) over one real iggy-server,
// bootstrapped from all three: the copiers' transactional ids, the
// partitions and the group are placed over the instances, so the
// transaction coordinator sends its markers to other instances and the
// group coordinator forwards the copiers' TxnOffsetCommit. At a third of
// the copy the instance coordinating copier 0's transactional id is
// killed with SIGKILL mid-transaction and started again 3 s later (after
// the others' membership timeout: another instance takes the id over from
// the store and the copier's transaction goes on there, then the
// restarted one takes it back); at two thirds the group's coordinator
// (or, when that is the instance killed first, the instance leading the
// most input and output partitions) is killed and started again a second
// later (before the timeout: it takes its ids, partitions and group back
// from the store itself). runCopy's assertions: every copier exits 0, the
// group's offsets reach the input's end, and read_committed reads every
// input record exactly once, in order per partition. kiggy only: Kafka
// runs the same assertions in TestTxnCopierKill.
func TestTxnCopierClusterKill(t *testing.T) {
	t.Parallel()
	kiggyOnly(t)
	testtools.JavaClasspath(t)
	iggyserver.Require(t)
	heavy(t)
	c := killableKiggyCluster(t, 3)
	var first int32
	// Twelve times TestTxnCopierKill's records, so the copy outlasts both
	// kills: the copiers go on through the first kill's 3 s outage (on the
	// instance that takes the id over), and were seen to copy 40,000
	// records in it, finishing a copy of 60,000 before the second kill.
	// The second kill comes at once when the copy passed two thirds during
	// the first.
	runCopy(t, c.tg, 12*copierRecords, func(i int, r copyRun) {
		switch i {
		case 0:
			first = c.coordinator(r.txnID(0), true)
			t.Logf("killing node %d, the coordinator of transactional id %s (partition leaders %v)", first, r.txnID(0), c.leaders(r.in, r.out))
			c.kill(first, 3*time.Second)
		default:
			node := c.coordinator(r.group, false)
			why := "the coordinator of group " + r.group
			if node == first {
				var ls map[int32]int
				node, ls = c.busiest([]int32{first}, r.in, r.out)
				why = fmt.Sprintf("the leader of the most partitions (%v; the group's coordinator is node %d, killed first)", ls, first)
			}
			t.Logf("killing node %d, %s", node, why)
			c.kill(node, time.Second)
		}
	})
}

// TestTxnETLCluster is TestTxnETL on a kiggy cluster of three processes
// over one real iggy-server: the franz-go GroupTransactSession members
// bootstrap from all three, member B joins, and once both transform, the
// group's coordinator, to which the members' TxnOffsetCommit go, is
// killed with SIGKILL mid-run and started again 3 s later (after the
// others' membership timeout: another instance takes the group, and the
// ids and partitions the killed one had, over, and the restarted one
// takes them back). The group session errors of the move are expected
// (the coordinator unreachable, which ends a franz-go member's session
// although the new coordinator restores the group, docs/design/cluster.md
// §7; UNKNOWN_MEMBER_ID, NOT_COORDINATOR from the old one: groupMoveErr),
// after which the members rejoin; any other client error fails the test. Then A crashes
// mid-transaction as in TestTxnETL, its open transaction aborted on its
// timeout by its coordinator. runETL's assertions: the group's offsets
// reach the input's end and read_committed reads every input record's
// transformation exactly once. kiggy only: Kafka runs the same assertions
// in TestTxnETL.
func TestTxnETLCluster(t *testing.T) {
	t.Parallel()
	kiggyOnly(t)
	iggyserver.Require(t)
	c := killableKiggyCluster(t, 3)
	runETL(t, c.tg, func(group string, a, b *member) {
		node := c.coordinator(group, false)
		t.Logf("killing node %d, the group's coordinator (A's transaction coordinator: node %d, B's: node %d)",
			node, c.coordinator(a.txnID, true), c.coordinator(b.txnID, true))
		c.kill(node, 3*time.Second)
	})
}

// txnIDsWithPrefix returns the transactional ids the cluster's
// coordinators list (ListTransactions through every instance) that begin
// with prefix, sorted.
func (c *kiggyCluster) txnIDsWithPrefix(prefix string) []string {
	c.t.Helper()
	adm, done := c.admin()
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		c.t.Logf("ListTransactions: %v", err)
	}
	var ids []string
	for id := range ls {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestStreamsEOSCluster is TestStreamsEOSKill on a kiggy cluster of three
// processes over one real iggy-server, with the kills on the server side:
// input keeps arriving (10 lines every 100 ms); once the output shows an
// open transaction's records, the instance coordinating the Streams
// producer's transactional id (found with ListTransactions; the group's
// coordinator when there is none) is killed with SIGKILL and started
// again a second later, then the group's coordinator is killed and
// started again 3 s later (the group moves, the application rebalances
// and aborts its open transaction), while WordCountEOS (Kafka Streams
// 4.4, exactly_once_v2, bootstrapped from all three) keeps running. Read
// with read_committed, the output must hold every word's counts exactly
// once, 1, 2, ... with none repeated or missing, and the application must
// close cleanly without going to ERROR. kiggy only: Kafka runs the same
// assertions in TestStreamsEOS and TestStreamsEOSKill.
func TestStreamsEOSCluster(t *testing.T) {
	t.Parallel()
	kiggyOnly(t)
	iggyserver.Require(t)
	javaClasses(t)
	heavy(t)
	c := killableKiggyCluster(t, 3)
	runStreamsCrash(t, c.tg, func(s *streamsApp, p *proc, before ends) *proc {
		node, why := int32(0), ""
		if ids := c.txnIDsWithPrefix(s.app); len(ids) > 0 {
			node, why = c.coordinator(ids[0], true), fmt.Sprintf("the coordinator of transactional id %s (of %v)", ids[0], ids)
		} else {
			node, why = c.coordinator(s.app, false), "the coordinator of group "+s.app+" (ListTransactions lists no id of the app)"
		}
		t.Logf("killing node %d, %s, output %v", node, why, before)
		c.kill(node, time.Second)
		node = c.coordinator(s.app, false)
		t.Logf("node back at %v; killing node %d, the coordinator of group %s, output %v",
			time.Since(s.startedAt).Round(time.Millisecond), node, s.app, endOffsets(t, c.tg, s.out)[0])
		c.kill(node, 3*time.Second)
		t.Logf("node %d back at %v", node, time.Since(s.startedAt).Round(time.Millisecond))
		return p
	})
}

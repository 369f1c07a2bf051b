package transactions

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

const (
	copierClass = "org.apache.kafka.tools.TransactionalMessageCopier"
	// copierPartitions input partitions, one copier each, with
	// copierRecords records in all (unless a test asks for more).
	copierPartitions = 2
	copierRecords    = 20000
)

// TestTxnCopier proves exactly-once copying by Kafka's own
// TransactionalMessageCopier (kafka-tools 4.4, the program of Kafka's
// tests/kafkatest/tests/core/transactions_test.py): 20,000 records on a
// 2-partition input topic, one copier per input partition (its own
// transactional.id, one consumer group, read_committed, 200 records and
// the consumer's offsets per transaction, sendOffsetsToTransaction with the
// group metadata) copying to the same partition of the output topic. Both
// copiers must exit 0, the group's committed offsets must be the input's
// end, and a read_committed consumer must read every input record exactly
// once, each output partition in its input partition's order.
func TestTxnCopier(t *testing.T) {
	t.Parallel()
	testtools.JavaClasspath(t)
	forEachTarget(t, func(t *testing.T, tg target) {
		heavy(t)
		runCopy(t, tg, copierRecords, nil)
	})
}

// TestTxnCopierKill is TestTxnCopier with two crashes of the server in
// the middle of the copy. On kiggy: kiggy runs as a process (./cmd/kiggy)
// on a real iggy-server and is killed with SIGKILL once about a third of
// the records are copied, then started again on the same address and the
// same Iggy, and again at two thirds. On Kafka: the broker (a dedicated
// one, not the shared one) is killed with SIGKILL and restarted over its
// data directory, at the same points. The copiers
// ride the outage with their retries; one that gives up (exits non-zero,
// as Kafka's system test lets a copier die) is started again with the same
// transactional.id and group, so it fences its predecessor and resumes from
// the committed offsets. When all have finished, a read_committed consumer
// must still read every input record exactly once, in order.
func TestTxnCopierKill(t *testing.T) {
	t.Parallel()
	testtools.JavaClasspath(t)
	for _, name := range targets(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			heavy(t)
			var tg target
			var restart func()
			if name == "kiggy" {
				tg, restart = killableKiggy(t)
			} else {
				tg, restart = killableKafka(t)
			}
			runCopy(t, tg, copierRecords, func(int, copyRun) { restart() })
		})
	}
}

// copyRun names one runCopy's topics and consumer group.
type copyRun struct{ in, out, group string }

// txnID is the transactional id of the copier of input partition p.
func (r copyRun) txnID(p int) string { return fmt.Sprintf("%s-%d", r.group, p) }

// runCopy runs the copiers over a fresh input of records records; with
// crash set it calls crash(0, run) once about a third of the records are
// in the output and crash(1, run) at two thirds (crash kills the server,
// or one of them, and brings it back).
func runCopy(t *testing.T, tg target, records int, crash func(i int, run copyRun)) {
	start := time.Now()
	in, out, group := uniqueName(t, "copy-in"), uniqueName(t, "copy-out"), uniqueName(t, "copy-group")
	run := copyRun{in: in, out: out, group: group}
	createTopic(t, tg, in, copierPartitions)
	createTopic(t, tg, out, copierPartitions)
	want := make([][]string, copierPartitions)
	var all []string
	{
		pr, err := kgo.NewClient(kgo.SeedBrokers(tg.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range records {
			p := int32(i % copierPartitions)
			v := fmt.Sprintf("m%05d", i)
			want[p] = append(want[p], v)
			all = append(all, v)
			recs = append(recs, &kgo.Record{Topic: in, Partition: p, Value: []byte(v)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = pr.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		pr.Close()
		if err != nil {
			t.Fatalf("%s: writing the input: %v", tg.name, err)
		}
	}
	t.Logf("%s: %d input records written in %v", tg.name, records, time.Since(start).Round(time.Millisecond))

	// The transaction timeout outlasts an outage: a broker that comes back
	// must not abort, on its timeout, the transaction of a copier that is
	// still retrying its writes (a single Kafka broker that did so, with 10
	// s, was seen to leave a transaction hanging: a late write of the
	// aborted transaction, after its marker, held the LSO back for good).
	// A copier that dies has its transaction aborted at once by its
	// successor's InitProducerId.
	copier := func(p int) *proc {
		return startJava(t, false, copierClass,
			"--broker-list", tg.addr, "--input-topic", in, "--input-partition", fmt.Sprint(p),
			"--output-topic", out, "--consumer-group", group, "--use-group-metadata",
			"--transactional-id", run.txnID(p), "--transaction-timeout", "120000",
			"--max-messages", "-1")
	}
	copiers := make([]*proc, copierPartitions)
	for p := range copiers {
		copiers[p] = copier(p)
	}
	restarts := 0
	// With crash set, the server is crashed twice: at a third and at two
	// thirds of the copy.
	crashes, crashesWanted := 0, 0
	if crash != nil {
		crashesWanted = 2
	}
	done := make([]bool, copierPartitions)
	deadline := time.Now().Add(150 * time.Second)
	for slices.Contains(done, false) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the copiers have not finished within 150 s (%d restarts; output %v)\n%s\n%s",
				tg.name, restarts, endOffsets(t, tg, out), copiers[0].describe(), copiers[1].describe())
		}
		if crashes < crashesWanted {
			var copied int64
			e := endOffsets(t, tg, out)
			for _, pe := range e {
				copied += pe.hw
			}
			if copied >= int64((crashes+1)*records/3) {
				t.Logf("%s: crashing the server with %d output offsets written (%v: LSO < HW is an open transaction's data), at %v",
					tg.name, copied, e, time.Since(start).Round(time.Millisecond))
				crash(crashes, run)
				crashes++
				t.Logf("%s: the server is back, at %v", tg.name, time.Since(start).Round(time.Millisecond))
			}
		}
		for p, c := range copiers {
			if done[p] || !c.exited() {
				continue
			}
			if err := c.exitErr(); err == nil {
				done[p] = true
				continue
			} else if crash == nil || restarts >= 6 {
				t.Fatalf("%s: copier %d exited with %v (%d restarts)\n%s", tg.name, p, err, restarts, c.describe())
			} else {
				t.Logf("%s: copier %d exited with %v; starting it again\n%s", tg.name, p, err, c.describe())
			}
			restarts++
			copiers[p] = copier(p)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s: the copiers finished at %v (%d restarts)", tg.name, time.Since(start).Round(time.Millisecond), restarts)
	if crashes < crashesWanted {
		t.Errorf("%s: the copy finished after %d of its %d crashes", tg.name, crashes, crashesWanted)
	}
	// The copiers committed their consumer offsets in their transactions.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		offs, err := admin(t, tg).FetchOffsets(ctx, group)
		cancel()
		if err != nil {
			t.Fatalf("%s: fetching the copiers' group offsets: %v", tg.name, err)
		}
		for p := range int32(copierPartitions) {
			if o, _ := offs.Lookup(in, p); o.At != int64(len(want[p])) || o.Err != nil {
				t.Errorf("%s: the copiers' group committed offset %d (%v) for input partition %d, want its end %d", tg.name, o.At, o.Err, p, len(want[p]))
			}
		}
	}

	rc := readAll(t, tg, out, copierPartitions, kgo.ReadCommitted())
	if d := exactlyOnce(all, values(rc)); d != "" {
		t.Errorf("%s: output read with read_committed: %s; %s", tg.name, d, duplicates(rc))
	}
	got := make([][]string, copierPartitions)
	for _, r := range rc {
		got[r.Partition] = append(got[r.Partition], string(r.Value))
	}
	for p := range got {
		if !slices.Equal(got[p], want[p]) {
			t.Errorf("%s: output partition %d (read_committed) holds %d records, not input partition %d's %d records in order", tg.name, p, len(got[p]), p, len(want[p]))
		}
	}
	ru := readAll(t, tg, out, copierPartitions, kgo.ReadUncommitted())
	t.Logf("%s: output: %d records read_committed, %d read_uncommitted; %v in all", tg.name, len(rc), len(ru), time.Since(start).Round(time.Millisecond))
}

// heavySem bounds the subtests that run JVM programs at once: the
// machine's cores are few.
var heavySem = make(chan struct{}, 2)

// heavy holds one of heavySem's places until t ends.
func heavy(t *testing.T) {
	heavySem <- struct{}{}
	t.Cleanup(func() { <-heavySem })
}

// killableKiggy runs kiggy as a process on a real iggy-server and returns
// its target and a crash that kills it with SIGKILL, waits a second and
// starts it again on the same address over the same Iggy.
func killableKiggy(t *testing.T) (target, func()) {
	node := iggyserver.StartT(t)
	kiggyproc.Binary(t)
	var addr string
	config := func() kiggyproc.Config {
		return kiggyproc.Config{Args: []string{
			"--listen", addr, "--admin-addr", "", "--drain-timeout", "2s",
			"--iggy-addr", node.Addr, "--iggy-username", iggyserver.Username, "--iggy-password", iggyserver.Password,
		}}
	}
	start := func() *kiggyproc.Proc { return kiggyproc.Start(t, config()) }
	// The port was free when freePort chose it but may be taken before
	// kiggy binds it (an outgoing connection's ephemeral port can be it):
	// then kiggy gets another port.
	var p *kiggyproc.Proc
	for attempt := 1; p == nil; attempt++ {
		addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var err error
		if p, err = kiggyproc.TryStart(t, config()); err != nil {
			if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
				t.Fatal(err)
			}
			t.Logf("kiggy: %s taken at start; trying another port", addr)
		}
	}
	if err := testtools.ProbeKafka(addr, 10*time.Second); err != nil {
		t.Fatalf("kiggy at %s is not answering: %v\n%s", addr, err, p.Tail(20))
	}
	return target{name: "kiggy", addr: addr}, func() {
		p.Kill()
		time.Sleep(time.Second)
		p = start()
	}
}

func freePort(t *testing.T) int {
	port, err := testtools.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// killableKafka starts a Kafka broker of the test's own and returns its
// target and a crash that kills the JVM with SIGKILL and starts a new one
// over the same data directory and ports.
func killableKafka(t *testing.T) (target, func()) {
	java, cp := testtools.JavaClasspath(t)
	dir := t.TempDir()
	b, err := kafkatest.StartProcess(dir, kafkatest.Config{Java: java, Classpath: cp, Heap: "512m", Props: kafkaProps})
	if err != nil {
		t.Fatal(err)
	}
	// The running JVM: kafkatest's first, then ours.
	pid, exited := b.Pid, b.Exited()
	var again *exec.Cmd
	t.Cleanup(func() {
		if again == nil {
			_ = b.Stop()
			return
		}
		_ = again.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = again.Process.Kill()
			<-exited
		}
	})
	restarts := 0
	return target{name: "kafka", addr: b.Addr}, func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
		restarts++
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("broker-restart-%d.log", restarts)))
		if err != nil {
			t.Fatal(err)
		}
		again = exec.Command(java, "-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "kafka.Kafka", filepath.Join(dir, "server.properties"))
		again.Dir = dir
		again.Stdout, again.Stderr = logf, logf
		again.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := again.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func(cmd *exec.Cmd) { _ = cmd.Wait(); logf.Close(); close(done) }(again)
		pid, exited = again.Process.Pid, done
		var perr error
		if !testtools.EventuallyEvery(90*time.Second, 250*time.Millisecond, func() bool {
			perr = testtools.ProbeKafka(b.Addr, 5*time.Second)
			return perr == nil
		}) {
			t.Fatalf("the restarted Kafka broker is not answering after 90 s: %v\n%s", perr, testtools.FileTail(logf.Name(), 30))
		}
	}
}

// duplicates describes where the first values read more than once are
// (partition/offset of each copy), for a failure message.
func duplicates(recs []*kgo.Record) string {
	at := map[string][]string{}
	var order []string
	for _, r := range recs {
		v := string(r.Value)
		if len(at[v]) == 1 {
			order = append(order, v)
		}
		at[v] = append(at[v], fmt.Sprintf("%d/%d", r.Partition, r.Offset))
	}
	var out []string
	for _, v := range order[:min(len(order), 6)] {
		out = append(out, fmt.Sprintf("%s at %v", v, at[v]))
	}
	return fmt.Sprintf("duplicates at: %v", out)
}

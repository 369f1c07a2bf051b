package interop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// groupProc is a running GroupConsumers JVM (tests/java/src): commands go
// to its stdin, and its event lines are collected as they arrive.
type groupProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   chan struct{} // closed when stdout reaches EOF

	waitOnce sync.Once
	waitErr  error

	mu    sync.Mutex
	lines []string
	at    []time.Time // when each line arrived
}

// wait waits for the process to exit (after its stdout closed) and returns
// how it ended; later calls return the same.
func (g *groupProc) wait() error {
	g.waitOnce.Do(func() {
		<-g.done
		g.waitErr = g.cmd.Wait()
	})
	return g.waitErr
}

// startGroupProc starts GroupConsumers for group on topic, the JVM given
// jvmFlags too (more logging, say); it is killed when ctx ends.
func startGroupProc(ctx context.Context, t testing.TB, classes, addr, topic, group, assignors string, jvmFlags ...string) *groupProc {
	t.Helper()
	java, cp := testtools.JavaClasspath(t)
	args := append([]string{"-Xmx512m", "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}, jvmFlags...)
	args = append(args, "-cp", classes+string(filepath.ListSeparator)+cp, "GroupConsumers", addr, topic, group, assignors)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.WaitDelay = 5 * time.Second
	g := &groupProc{t: t, cmd: cmd, done: make(chan struct{})}
	var err error
	if g.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting GroupConsumers: %v", err)
	}
	// A test that fails half-way leaves no JVM behind.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = g.wait()
	})
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			g.mu.Lock()
			g.lines = append(g.lines, sc.Text())
			g.at = append(g.at, time.Now())
			g.mu.Unlock()
		}
		if err := sc.Err(); err != nil {
			g.mu.Lock()
			g.lines = append(g.lines, "E\t-\treading GroupConsumers' output: "+err.Error())
			g.at = append(g.at, time.Now())
			g.mu.Unlock()
			_, _ = io.Copy(io.Discard, stdout)
		}
	}()
	return g
}

// send writes one command line.
func (g *groupProc) send(cmd string) {
	g.t.Helper()
	g.t.Logf("GroupConsumers <- %s", cmd)
	if _, err := io.WriteString(g.stdin, cmd+"\n"); err != nil {
		g.t.Fatalf("GroupConsumers: writing %q: %v\n%s", cmd, err, g.tail())
	}
}

func (g *groupProc) snapshot() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.lines)
}

// tail is the end of the event lines, without records, and of stderr, for
// failure messages.
func (g *groupProc) tail() string {
	var ev []string
	for _, l := range g.snapshot() {
		if !strings.HasPrefix(l, "R\t") {
			ev = append(ev, l)
		}
	}
	if len(ev) > 60 {
		ev = ev[len(ev)-60:]
	}
	return "--- events (records left out):\n" + strings.Join(ev, "\n") + "\n--- stderr:\n" + tail(g.stderr.String())
}

// waitUntil polls the events until ok holds, failing t after timeout.
func (g *groupProc) waitUntil(timeout time.Duration, what string, ok func([]string) bool) {
	g.t.Helper()
	start := time.Now()
	for deadline := start.Add(timeout); ; {
		if ok(g.snapshot()) {
			g.t.Logf("GroupConsumers: %s after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-g.done:
			if ok(g.snapshot()) {
				return
			}
			g.t.Fatalf("GroupConsumers exited while waiting for %s\n%s", what, g.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("GroupConsumers: no %s after %v\n%s", what, timeout, g.tail())
		}
	}
}

// assignments replays assigned/revoked/lost events: the partitions each
// live member owns after the last event.
func assignments(lines []string) map[string]map[int32]bool {
	own := map[string]map[int32]bool{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "joined":
			own[f[1]] = map[int32]bool{}
		case "left":
			delete(own, f[1])
		case "assigned", "revoked", "lost":
			if own[f[1]] == nil || len(f) < 3 || f[2] == "" {
				continue
			}
			for p := range strings.SplitSeq(f[2], ",") {
				n, _ := strconv.Atoi(p)
				if f[0] == "assigned" {
					own[f[1]][int32(n)] = true
				} else {
					delete(own[f[1]], int32(n))
				}
			}
		}
	}
	return own
}

// settled says the live members are exactly members, each owns at least
// one partition, and together they own all partitions once.
func settled(partitions int32, members ...string) func([]string) bool {
	return func(lines []string) bool {
		own := assignments(lines)
		if len(own) != len(members) {
			return false
		}
		count := map[int32]int{}
		for _, m := range members {
			if len(own[m]) == 0 {
				return false
			}
			for p := range own[m] {
				count[p]++
			}
		}
		for p := range partitions {
			if count[p] != 1 {
				return false
			}
		}
		return len(count) == int(partitions)
	}
}

// steadyProducer produces small keyed records with franz-go until stopped,
// remembering the value of every acknowledged (partition, offset).
type steadyProducer struct {
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex
	sent map[int32]map[int64]string
	errs []error
}

func startSteadyProducer(t testing.TB, addr, topic string) *steadyProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProduceRequestTimeout(20*time.Second), kgo.RecordDeliveryTimeout(45*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sp := &steadyProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{}), sent: map[int32]map[int64]string{}}
	go func() {
		defer close(sp.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; {
			select {
			case <-sp.stop:
				return
			case <-tick.C:
			}
			for range 10 {
				r := &kgo.Record{Key: fmt.Appendf(nil, "k-%d", seq), Value: fmt.Appendf(nil, "g-%07d", seq)}
				seq++
				cl.Produce(context.Background(), r, sp.acked)
			}
		}
	}()
	return sp
}

// ackedCount returns how many records have been acknowledged so far.
func (sp *steadyProducer) ackedCount() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	n := 0
	for _, offs := range sp.sent {
		n += len(offs)
	}
	return n
}

func (sp *steadyProducer) acked(r *kgo.Record, err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err != nil {
		sp.errs = append(sp.errs, err)
		return
	}
	if sp.sent[r.Partition] == nil {
		sp.sent[r.Partition] = map[int64]string{}
	}
	sp.sent[r.Partition][r.Offset] = string(r.Value)
}

// finish stops producing, waits for every acknowledgement and returns what
// was sent, by partition and offset.
func (sp *steadyProducer) finish(t testing.TB) map[int32]map[int64]string {
	t.Helper()
	close(sp.stop)
	<-sp.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sp.cl.Flush(ctx); err != nil {
		t.Fatalf("steady producer: flush: %v", err)
	}
	sp.cl.Close()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.errs) > 0 {
		t.Fatalf("steady producer: %d records failed, first: %v", len(sp.errs), sp.errs[0])
	}
	return sp.sent
}

// groupLoad is the load the Java group tests change memberships under: a
// steady franz-go producer on the topic.
type groupLoad struct {
	t       *testing.T
	sp      *steadyProducer
	stopped bool
}

// startGroupLoad starts the steady producer; the test's end stops it if
// finish did not.
func startGroupLoad(t *testing.T, addr, topic string) *groupLoad {
	l := &groupLoad{t: t, sp: startSteadyProducer(t, addr, topic)}
	t.Cleanup(func() {
		if !l.stopped {
			close(l.sp.stop)
			l.sp.cl.Close()
		}
	})
	return l
}

// consumeAWhile waits until n more records are acknowledged: the load
// between two steps of a test.
func (l *groupLoad) consumeAWhile(n int) {
	l.t.Helper()
	from := l.sp.ackedCount()
	testtools.WaitFor(l.t, 2*time.Minute, fmt.Sprintf("%d more records produced under this membership", n), func() bool { return l.sp.ackedCount() >= from+n })
}

// finish stops the producer, waits until the group has committed every
// partition's end, and returns what was sent.
func (l *groupLoad) finish(tg target, group, topic string, partitions int32, g *groupProc) map[int32]map[int64]string {
	l.t.Helper()
	l.stopped = true
	sent := l.sp.finish(l.t)
	ends := map[int32]int64{}
	total := 0
	for p, offs := range sent {
		ends[p] = int64(len(offs))
		total += len(offs)
	}
	l.t.Logf("%s: franz-go produced %d records over %d partitions", tg.Name(), total, len(sent))
	waitCommitted(l.t, tg, group, topic, partitions, ends, 2*time.Minute, g)
	return sent
}

// quit ends a GroupConsumers process, which must close every member and
// say "bye" (its ctx kills the JVM if it hangs).
func (g *groupProc) quit() {
	g.t.Helper()
	g.send("quit")
	g.stdin.Close()
	err := g.wait()
	lines := g.snapshot()
	if err != nil || len(lines) == 0 || lines[len(lines)-1] != "bye" {
		g.t.Fatalf("GroupConsumers did not end with \"bye\": %v\n%s", err, g.tail())
	}
}

// TestJavaConsumerGroup runs a group of Java KafkaConsumers (classic
// protocol, tests/java/src/GroupConsumers.java: commitSync after each poll)
// on a 6-partition topic created by kafka-topics, while franz-go produces
// steadily: three members join, one leaves, one joins, another leaves,
// another joins. Every produced record must be consumed at least once, with
// its value; no record may be consumed after the group committed an offset
// beyond it, and no commit may go back; at the end the group has committed
// every partition's end. Once with the Java default assignors (range wins:
// eager rebalances) and once with cooperative-sticky (incremental).
func TestJavaConsumerGroup(t *testing.T) {
	tg := newTarget(t)
	classes := compileJava(t, "GroupConsumers.java")
	for _, tc := range []struct{ name, assignors string }{
		{"range", "default"},
		{"cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 6
			topic := topicName(t)
			group := "java-" + topic
			topicCommandCreate(t, tg, topic, partitions)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			g := startGroupProc(ctx, t, classes, tg.Addr(), topic, group, tc.assignors)
			defer func() {
				if t.Failed() {
					t.Logf("GroupConsumers output:\n%s", g.tail())
				}
			}()
			load := startGroupLoad(t, tg.Addr(), topic)
			const step = 2 * time.Minute
			// Each configuration consumes under the steady producer until
			// it has had another 1,000 records acknowledged (2 s at its 500
			// a second): the load between the steps is the test.
			consumeAWhile := func() { load.consumeAWhile(1000) }
			for _, m := range []string{"m1", "m2", "m3"} {
				g.send("join " + m)
			}
			g.waitUntil(step, "m1, m2, m3 sharing the partitions", settled(partitions, "m1", "m2", "m3"))
			consumeAWhile()
			g.send("leave m2")
			g.waitUntil(step, "m1, m3 sharing the partitions", settled(partitions, "m1", "m3"))
			consumeAWhile()
			g.send("join m4")
			g.waitUntil(step, "m1, m3, m4 sharing the partitions", settled(partitions, "m1", "m3", "m4"))
			consumeAWhile()
			g.send("leave m1")
			g.waitUntil(step, "m3, m4 sharing the partitions", settled(partitions, "m3", "m4"))
			g.send("join m5")
			g.waitUntil(step, "m3, m4, m5 sharing the partitions", settled(partitions, "m3", "m4", "m5"))
			consumeAWhile()
			sent := load.finish(tg, group, topic, partitions, g)
			g.quit()
			checkGroupEvents(t, g.snapshot(), partitions, sent)
		})
	}
}

// waitCommitted polls the group's committed offsets (franz-go admin
// OffsetFetch) until every partition's is its end.
func waitCommitted(t testing.TB, tg target, group, topic string, partitions int32, ends map[int32]int64, timeout time.Duration, g *groupProc) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	start := time.Now()
	var last string
	if testtools.EventuallyEvery(timeout, 500*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		offs, err := adm.FetchOffsets(ctx, group)
		cancel()
		if err == nil {
			var behind []string
			for p := range partitions {
				o, ok := offs.Lookup(topic, p)
				if !ok || o.Err != nil || o.At != ends[p] {
					behind = append(behind, fmt.Sprintf("%d: %d of %d", p, o.At, ends[p]))
				}
			}
			if len(behind) == 0 {
				return true
			}
			last = strings.Join(behind, ", ")
		} else {
			last = err.Error()
		}
		return false
	}) {
		t.Logf("group %s committed every end after %v", group, time.Since(start).Round(time.Millisecond))
		return
	}
	t.Fatalf("group %s did not commit every partition's end within %v (last: %s)\n%s", group, timeout, last, g.tail())
}

// checkGroupEvents checks the members' events in the order they happened:
// records consumed against what was sent and against the group's committed
// offsets so far, commits that never go back, no member errors.
func checkGroupEvents(t testing.TB, lines []string, partitions int32, sent map[int32]map[int64]string) {
	t.Helper()
	committed := map[int32]int64{}
	uncertain := map[int32]int64{} // commits interrupted by a wakeup: maybe applied
	seen := map[int32]map[int64]int{}
	records, failedCommits, bad := 0, 0, 0
	report := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for i, l := range lines {
		f := strings.SplitN(l, "\t", 5)
		switch f[0] {
		case "R", "C", "U":
			if len(f) < 4 || f[0] == "R" && len(f) != 5 {
				report("event %d: malformed %q", i, l)
				continue
			}
			p64, err1 := strconv.ParseInt(f[2], 10, 32)
			o, err2 := strconv.ParseInt(f[3], 10, 64)
			p := int32(p64)
			if err1 != nil || err2 != nil || p < 0 || p >= partitions {
				report("event %d: malformed %q", i, l)
				continue
			}
			if f[0] == "U" {
				uncertain[p] = max(uncertain[p], o)
				continue
			}
			if f[0] == "C" {
				if o < committed[p] {
					report("event %d: %s committed offset %d for partition %d after the group had committed %d (commit went back)", i, f[1], o, p, committed[p])
				}
				committed[p] = max(committed[p], o)
				continue
			}
			records++
			if o < committed[p] {
				report("event %d: %s consumed %d/%d after the group had committed offset %d (rewind)", i, f[1], p, o, committed[p])
			}
			want, ok := sent[p][o]
			switch {
			case !ok:
				report("event %d: %s consumed %d/%d, which was never produced (value %q)", i, f[1], p, o, f[4])
			case want != f[4]:
				report("event %d: %s consumed %d/%d with value %q, produced %q", i, f[1], p, o, f[4], want)
			}
			if seen[p] == nil {
				seen[p] = map[int64]int{}
			}
			seen[p][o]++
		case "F":
			if failedCommits++; failedCommits <= 3 {
				t.Logf("event %d: %s", i, l)
			}
		case "E":
			report("event %d: member error: %s", i, l)
		}
	}
	missing, dups := 0, 0
	for p := range partitions {
		for o := range int64(len(sent[p])) {
			switch n := seen[p][o]; {
			case n == 0:
				if missing++; missing <= 10 {
					t.Errorf("record %d/%d (value %q) was never consumed", p, o, sent[p][o])
				}
			case n > 1:
				dups += n - 1
			}
		}
		// A commit interrupted by the member's wakeup may have been the
		// one that reached the end (the group's offset, checked before quit,
		// is the end either way).
		if end := int64(len(sent[p])); committed[p] != end && uncertain[p] != end {
			t.Errorf("the members' last commit for partition %d is %d, want the end %d", p, committed[p], end)
		}
	}
	if missing > 10 {
		t.Errorf("%d records were never consumed in all", missing)
	}
	if bad > 10 {
		t.Errorf("%d bad events in all", bad)
	}
	t.Logf("members consumed %d records (%d again after a rebalance, uncommitted); %d commits failed", records, dups, failedCommits)
}

// TestCheckGroupEventsCatches proves the group checks can fail: each
// broken event stream is reported, and a clean one is not.
func TestCheckGroupEventsCatches(t *testing.T) {
	sent := map[int32]map[int64]string{0: {0: "a", 1: "b"}, 1: {0: "c"}}
	clean := []string{
		"joined\tm1", "assigned\tm1\t0,1",
		"R\tm1\t0\t0\ta", "R\tm1\t1\t0\tc", "C\tm1\t0\t1", "C\tm1\t1\t1",
		"revoked\tm1\t0,1", "left\tm1", "joined\tm2", "assigned\tm2\t0,1",
		"R\tm2\t0\t1\tb", "C\tm2\t0\t2", "left\tm2", "bye",
	}
	for _, tc := range []struct {
		name  string
		edit  func([]string) []string
		wants []string
	}{
		{"clean", func(l []string) []string { return l }, nil},
		{"rewind", func(l []string) []string {
			return slices.Insert(l, 11, "R\tm2\t0\t0\ta")
		}, []string{"consumed 0/0 after the group had committed offset 1 (rewind)"}},
		{"commit back", func(l []string) []string {
			return slices.Insert(l, 12, "C\tm2\t0\t0")
		}, []string{"commit went back"}},
		{"missing record", func(l []string) []string {
			return slices.Delete(l, 10, 12)
		}, []string{"record 0/1 (value \"b\") was never consumed", "last commit for partition 0 is 1, want the end 2"}},
		{"interrupted last commit", func(l []string) []string {
			l[11] = "U\tm2\t0\t2"
			return slices.Insert(l, 12, "F\tm2\twoken up during commitSync")
		}, nil},
		{"interrupted short commit", func(l []string) []string {
			l[11] = "U\tm2\t0\t1"
			return l
		}, []string{"last commit for partition 0 is 1, want the end 2"}},
		{"wrong value", func(l []string) []string {
			l[2] = "R\tm1\t0\t0\tx"
			return l
		}, []string{"with value \"x\", produced \"a\""}},
		{"never produced", func(l []string) []string {
			return slices.Insert(l, 11, "R\tm2\t0\t2\tz")
		}, []string{"0/2, which was never produced"}},
		{"member error", func(l []string) []string {
			return slices.Insert(l, 5, "E\tm1\tboom")
		}, []string{"member error"}},
		{"malformed", func(l []string) []string {
			return slices.Insert(l, 5, "R\tm1\tx\t0\ta")
		}, []string{"malformed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			checkGroupEvents(rec, tc.edit(slices.Clone(clean)), 2, sent)
			if len(rec.errs) != len(tc.wants) {
				t.Fatalf("reported %q, want %d errors containing %q", rec.errs, len(tc.wants), tc.wants)
			}
			for i, w := range tc.wants {
				if !strings.Contains(rec.errs[i], w) {
					t.Errorf("error %d is %q, want it to contain %q", i, rec.errs[i], w)
				}
			}
		})
	}
}

// TestSettled pins the replay of assignment events the group test waits on.
func TestSettled(t *testing.T) {
	lines := []string{"joined\ta", "joined\tb", "assigned\ta\t0,1,2", "assigned\tb\t3"}
	if settled(4, "a", "b")(lines) != true {
		t.Errorf("a owns 0-2 and b owns 3: not settled")
	}
	if settled(4, "a", "b")(append(slices.Clone(lines), "revoked\tb\t3")) {
		t.Errorf("partition 3 revoked from b: settled")
	}
	if settled(4, "a", "b")(append(slices.Clone(lines), "assigned\tb\t2")) {
		t.Errorf("partition 2 owned twice: settled")
	}
	if settled(4, "a")(append(slices.Clone(lines), "left\tb", "assigned\ta\t3")) != true {
		t.Errorf("b left and a took 3: not settled")
	}
	if settled(4, "a", "b", "c")(append(slices.Clone(lines), "joined\tc")) {
		t.Errorf("c owns nothing: settled")
	}
}

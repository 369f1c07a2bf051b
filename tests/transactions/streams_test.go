package transactions

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// words is the vocabulary of the word-count input; line i holds words
// chosen from it by i, so the expected counts are known.
var words = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}

// wordLines returns n input lines starting at line number from, and adds
// their words to counts.
func wordLines(from, n int, counts map[string]int64) []string {
	var lines []string
	for i := from; i < from+n; i++ {
		var ws []string
		for j := 0; j <= i%4; j++ {
			w := words[(i*3+j*5)%len(words)]
			ws = append(ws, w)
			counts[w]++
		}
		// Upper case and punctuation: the app lower-cases and splits on \W+.
		lines = append(lines, strings.ToUpper(ws[0][:1])+ws[0][1:]+", "+strings.Join(ws[1:], " ")+".")
	}
	return lines
}

// produceLines writes lines to topic's two partitions, alternately.
func produceLines(ctx context.Context, cl *kgo.Client, topic string, from int, lines []string) error {
	recs := make([]*kgo.Record, len(lines))
	for i, l := range lines {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32((from + i) % 2), Value: []byte(l)}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// countRuns checks the committed output of a word count: every word's
// counts must run 1, 2, 3, ... want[word], with no gap and no repeat
// (exactly once: each input word counted once, each count written once);
// it returns what differs, or "".
func countRuns(t testing.TB, recs []*kgo.Record, want map[string]int64) string {
	t.Helper()
	next := map[string]int64{}
	var bad []string
	for _, r := range recs {
		w := string(r.Key)
		if len(r.Value) != 8 {
			bad = append(bad, fmt.Sprintf("%q: value %q is not an 8-byte long", w, r.Value))
			continue
		}
		n := int64(binary.BigEndian.Uint64(r.Value))
		if n != next[w]+1 {
			bad = append(bad, fmt.Sprintf("%q counted %d after %d (offset %d)", w, n, next[w], r.Offset))
		}
		next[w] = n
	}
	if !maps.Equal(next, want) {
		bad = append(bad, fmt.Sprintf("latest counts %v, want %v", next, want))
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%d problems: %s", len(bad), head(bad))
}

var streamsState = regexp.MustCompile(`^state \S+->(\S+)$`)

// streamsApp is one WordCountEOS run's topics and expected counts.
type streamsApp struct {
	tg           target
	in, out, app string
	stateDir     string
	mu           sync.Mutex
	want         map[string]int64
	lines        int
	producer     *kgo.Client
	startedAt    time.Time
}

func newStreamsApp(t *testing.T, tg target) *streamsApp {
	app := uniqueName(t, "eos")
	s := &streamsApp{tg: tg, in: app + "-in", out: app + "-out", app: app, stateDir: t.TempDir(),
		want: map[string]int64{}, startedAt: time.Now()}
	createTopic(t, tg, s.in, 2)
	createTopic(t, tg, s.out, 1)
	s.producer = client(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return s
}

// write appends n lines to the input.
func (s *streamsApp) write(ctx context.Context, n int) error {
	s.mu.Lock()
	from := s.lines
	lines := wordLines(from, n, s.want)
	s.lines += n
	s.mu.Unlock()
	return produceLines(ctx, s.producer, s.in, from, lines)
}

func (s *streamsApp) wanted() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.want)
}

// start runs WordCountEOS and waits until it is RUNNING.
func (s *streamsApp) start(t *testing.T) *proc {
	p := startJava(t, true, "kiggy.transactions.WordCountEOS", s.tg.addr, s.in, s.out, s.app, s.stateDir)
	p.waitLine(regexp.MustCompile(`->RUNNING$`), 90*time.Second)
	t.Logf("%s: WordCountEOS running at %v", s.tg.name, time.Since(s.startedAt).Round(time.Millisecond))
	return p
}

// awaitCounts waits until the committed output (read_committed) holds
// every word's expected latest count, then checks its runs.
func (s *streamsApp) awaitCounts(t *testing.T, p *proc, timeout time.Duration) []*kgo.Record {
	want := s.wanted()
	var recs []*kgo.Record
	var got map[string]int64
	testtools.EventuallyEvery(timeout, 500*time.Millisecond, func() bool {
		recs = readAll(t, s.tg, s.out, 1, kgo.ReadCommitted())
		got = map[string]int64{}
		for _, r := range recs {
			if len(r.Value) == 8 {
				got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			}
		}
		over := false
		for w, n := range got {
			over = over || n > want[w] // a count never comes down
		}
		return maps.Equal(got, want) || over || p.exited()
	})
	if !maps.Equal(got, want) {
		dumpTopics(t, s.tg, s.app)
		t.Fatalf("%s: committed output counts %v, want %v (exited %v); %s\n%s", s.tg.name, got, want, p.exited(), countRuns(t, recs, want), p.describe())
	}
	if d := countRuns(t, recs, want); d != "" {
		t.Errorf("%s: committed output (read_committed) is not exactly once: %s", s.tg.name, d)
	}
	return recs
}

// dumpTopics writes every record of the topics whose names begin with
// prefix (the application's input, output, repartition and changelog
// topics), control records included, read_uncommitted and then
// read_committed, one line a record, to
// $KIGGY_TXN_CLUSTER_LOGS/<test name>/<topic>.txt, for a failure's
// evidence; nothing when that is unset.
func dumpTopics(t *testing.T, tg target, prefix string) {
	dir := os.Getenv("KIGGY_TXN_CLUSTER_LOGS")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tds, err := admin(t, tg).ListTopics(ctx)
	if err != nil {
		t.Logf("dumping the topics: %v", err)
		return
	}
	for _, td := range tds.Sorted() {
		if !strings.HasPrefix(td.Topic, prefix) {
			continue
		}
		var b strings.Builder
		n := int32(len(td.Partitions))
		for _, level := range []kgo.IsolationLevel{kgo.ReadUncommitted(), kgo.ReadCommitted()} {
			fmt.Fprintf(&b, "# %s\n", isolationName(level))
			for _, r := range readAll(t, tg, td.Topic, n, level, kgo.KeepControlRecords()) {
				fmt.Fprintf(&b, "%d/%d pid %d epoch %d txn %v control %v key %q value %x\n", r.Partition, r.Offset,
					r.ProducerID, r.ProducerEpoch, r.Attrs.IsTransactional(), r.Attrs.IsControl(), r.Key, r.Value)
			}
		}
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, td.Topic+".txt"), []byte(b.String()), 0o644)
		}
		if err != nil {
			t.Logf("dumping %s: %v", td.Topic, err)
		}
	}
	t.Logf("the application's topics are dumped in %s", dir)
}

// stop closes the application (it commits) and checks it exited cleanly
// and never went to ERROR.
func (s *streamsApp) stop(t *testing.T, p *proc) {
	p.closeStdin()
	if err := p.wait(45 * time.Second); err != nil {
		t.Errorf("%s: WordCountEOS exited with %v\n%s", s.tg.name, err, p.describe())
	}
	for _, l := range p.output() {
		if m := streamsState.FindStringSubmatch(l); m != nil && (m[1] == "ERROR" || m[1] == "PENDING_ERROR") {
			t.Errorf("%s: WordCountEOS went to %s\n%s", s.tg.name, m[1], p.describe())
		}
	}
}

// TestStreamsEOS runs tests/java/src/kiggy/transactions/WordCountEOS (Kafka
// Streams 4.4, exactly_once_v2: a repartition, a RocksDB count store with
// its changelog, a transaction every 100 ms) over a 2-partition input:
// read with read_committed, the output must hold every word's counts
// exactly once, 1, 2, ... up to its number of occurrences in the input,
// and the application must close cleanly.
func TestStreamsEOS(t *testing.T) {
	t.Parallel()
	javaClasses(t) // compile (or skip) before starting a target
	forEachTarget(t, func(t *testing.T, tg target) {
		heavy(t)
		s := newStreamsApp(t, tg)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.write(ctx, 100); err != nil {
			t.Fatalf("%s: writing the input: %v", tg.name, err)
		}
		p := s.start(t)
		recs := s.awaitCounts(t, p, 60*time.Second)
		s.stop(t, p)
		t.Logf("%s: %d committed counts for %d lines; %v in all", tg.name, len(recs), s.lines, time.Since(s.startedAt).Round(time.Millisecond))
	})
}

// TestStreamsEOSKill is TestStreamsEOS with a crash: input keeps arriving
// (10 lines every 100 ms), and once the application has written some
// output and the output shows an open transaction's records (high
// watermark above the LSO) the Streams JVM is killed with SIGKILL, and
// started again over the same state directory. The restarted instance
// fences its predecessor's transaction, restores its store from the
// changelog and resumes from the committed offsets. Read with
// read_committed, the output must hold every word's counts exactly once,
// 1, 2, ... with no count repeated (work the killed instance had done in
// its open transaction, redone after the restart, must not show twice)
// and none missing.
func TestStreamsEOSKill(t *testing.T) {
	t.Parallel()
	javaClasses(t)
	forEachTarget(t, func(t *testing.T, tg target) {
		heavy(t)
		runStreamsCrash(t, tg, func(s *streamsApp, p *proc, before ends) *proc {
			p.kill()
			t.Logf("%s: WordCountEOS killed at %v, output %v just before", tg.name, time.Since(s.startedAt).Round(time.Millisecond), before)
			return s.start(t)
		})
	})
}

// runStreamsCrash runs WordCountEOS on tg with input arriving (10 lines
// every 100 ms) and, once the application has written some output and
// the output shows an open transaction's records (high watermark above
// the LSO), calls crash (which kills the application or a server and
// returns the application running); input keeps arriving for a second
// after it. Then the committed output must hold the exact counts, each
// once, and the application must close cleanly.
func runStreamsCrash(t *testing.T, tg target, crash func(s *streamsApp, p *proc, before ends) *proc) {
	s := newStreamsApp(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.write(ctx, 40); err != nil {
		t.Fatalf("%s: writing the input: %v", tg.name, err)
	}
	p := s.start(t)
	// Input keeps arriving, 10 lines every 100 ms, until the crash and
	// for a second after it.
	writing := make(chan error, 1)
	crashed := make(chan struct{})
	go func() {
		after := -1
		for n := 0; n < 300 && after < 10; n++ {
			if err := s.write(ctx, 10); err != nil {
				writing <- err
				return
			}
			select {
			case <-crashed:
				after++
			default:
			}
			time.Sleep(100 * time.Millisecond)
		}
		writing <- nil
	}()
	// Crash once the output holds more than the first batch's counts and
	// an open transaction's records (HW above the LSO): the application
	// is mid-stream and mid-transaction.
	var before ends
	testtools.WaitFor(t, 60*time.Second, tg.name+": output of an open WordCountEOS transaction", func() bool {
		before = endOffsets(t, tg, s.out)[0]
		return before.hw > 150 && before.hw > before.lso || p.exited()
	})
	p = crash(s, p, before)
	close(crashed)
	if err := <-writing; err != nil {
		t.Fatalf("%s: writing the input: %v", tg.name, err)
	}
	recs := s.awaitCounts(t, p, 80*time.Second)
	s.stop(t, p)
	ru := readAll(t, tg, s.out, 1, kgo.ReadUncommitted())
	t.Logf("%s: %d committed counts for %d lines (%d records read_uncommitted: aborted work included); %v in all",
		tg.name, len(recs), s.lines, len(ru), time.Since(s.startedAt).Round(time.Millisecond))
}

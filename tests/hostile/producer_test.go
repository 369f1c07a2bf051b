//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxStall is the longest produce round trip the good producer may see
// while a hostile case runs.
const maxStall = time.Second

// produceEvery is the good producer's pace: one ProduceSync, then this pause.
const produceEvery = 5 * time.Millisecond

// goodProducer is a well-behaved franz-go producer (acks=all, idempotent,
// small records, one ProduceSync every few ms) that records every
// produce's start, latency and error.
type goodProducer struct {
	cl     *kgo.Client
	topic  string
	mu     sync.Mutex
	sample []sample
	// inDoubt counts produces cut short by stop: the record may or may
	// not have been stored.
	inDoubt int64
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
	// pid is the producer's process (startProducerProcess), 0 in the test's.
	pid int
	// events are the client's connects, disconnects and slow or failed
	// requests (kgo hooks), printed when a case fails, to tell a slow
	// gateway from a slow dial or a starved test process.
	events []event
}

// event is one connection-level observation of the client.
type event struct {
	at   time.Time
	what string
}

// slowRequest is the round trip from which a request becomes an event.
const slowRequest = 100 * time.Millisecond

func (p *goodProducer) note(what string) {
	p.mu.Lock()
	p.events = append(p.events, event{time.Now(), what})
	p.mu.Unlock()
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (p *goodProducer) OnBrokerConnect(meta kgo.BrokerMetadata, initDur time.Duration, conn net.Conn, err error) {
	local := ""
	if conn != nil {
		local = conn.LocalAddr().String()
	}
	p.note(fmt.Sprintf("connect to node %d from %s in %v, err %v", meta.NodeID, local, initDur.Round(time.Microsecond), err))
}

// OnBrokerDisconnect implements kgo.HookBrokerDisconnect.
func (p *goodProducer) OnBrokerDisconnect(meta kgo.BrokerMetadata, conn net.Conn) {
	p.note(fmt.Sprintf("disconnect from node %d (%s)", meta.NodeID, conn.LocalAddr()))
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (p *goodProducer) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if e.Err() == nil && e.DurationE2E() < slowRequest && e.WriteWait < slowRequest {
		return
	}
	p.note(fmt.Sprintf("key %d to node %d: queued %v, write %v, wait %v, read %v, err %v",
		key, meta.NodeID, e.WriteWait.Round(time.Microsecond), e.TimeToWrite.Round(time.Microsecond),
		e.ReadWait.Round(time.Microsecond), e.TimeToRead.Round(time.Microsecond), e.Err()))
}

// sample is one ProduceSync.
type sample struct {
	start time.Time
	took  time.Duration
	err   error
}

// startProducer starts producing to topic (which must exist), with extra
// client options (SASL).
func startProducer(t *testing.T, addr, topic string, extra ...kgo.Opt) *goodProducer {
	t.Helper()
	var err error
	ctx, cancel := context.WithCancel(context.Background())
	p := &goodProducer{topic: topic, cancel: cancel, done: make(chan struct{})}
	if p.cl, err = kgo.NewClient(producerOpts(addr, topic, append(extra, kgo.WithHooks(p))...)...); err != nil {
		t.Fatal(err)
	}
	go p.run(ctx)
	t.Cleanup(p.stop)
	return p
}

// producerOpts are the good producer's client options.
func producerOpts(addr, topic string, extra ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID("good-producer"),
	}, extra...)
}

func (p *goodProducer) run(ctx context.Context) {
	defer close(p.done)
	value := make([]byte, 100)
	for i := 0; ctx.Err() == nil; i++ {
		copy(value, fmt.Sprintf("good-%09d", i))
		rec := &kgo.Record{Value: value}
		start := time.Now()
		// The deadline only bounds a stall so that it gets recorded; any
		// produce over maxStall already fails the case.
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := p.cl.ProduceSync(pctx, rec).FirstErr()
		cancel()
		stopped := ctx.Err() != nil
		p.mu.Lock()
		switch {
		case !stopped || err == nil:
			// A produce acknowledged as stop began still counts.
			p.sample = append(p.sample, sample{start: start, took: time.Since(start), err: err})
		default:
			p.inDoubt++
		}
		p.mu.Unlock()
		if stopped {
			return
		}
		time.Sleep(produceEvery) // paces the good producer
	}
}

// stop ends the producer and closes its client.
func (p *goodProducer) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		if p.cl != nil { // nil: a producer process (startProducerProcess)
			p.cl.Close()
		}
	})
}

// unsure returns the number of produces stop cut short.
func (p *goodProducer) unsure() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inDoubt
}

// acked returns the number of produces that succeeded.
func (p *goodProducer) acked() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, s := range p.sample {
		if s.err == nil {
			n++
		}
	}
	return n
}

// check asserts that every produce overlapping [from, to] succeeded within
// maxStall (see verdict).
func (p *goodProducer) check(t testing.TB, sched *schedSampler, from, to time.Time) {
	t.Helper()
	v, err := p.verdict(sched, from, to)
	if err != nil {
		t.Fatalf("good producer: %v", err)
	}
	t.Logf("good producer: %s", v.summary)
	for _, e := range v.excused {
		t.Logf("not counted as a gateway stall, the machine was starving the processes: %s", e)
	}
	if len(v.bad) > 0 {
		t.Errorf("good producer saw %d errors or stalls over %v during the case:\n%sclient events around the case:\n%s",
			len(v.bad), maxStall, joinMax(v.bad, 20), joinMax(p.eventsIn(from, from.Add(-time.Second), to.Add(time.Second)), 40))
	}
}

// verdict is what the good producer saw over a window.
type verdict struct {
	summary string
	// bad lists failed produces and produces slower than maxStall.
	bad []string
	// excused lists produces slower than maxStall during which a thread of
	// kiggy or of the test waited for a CPU at least as long as the excess.
	excused []string
}

// verdict judges the produces overlapping [from, to]. It first waits for a
// produce that started after to, so that a produce stuck across the whole
// window is recorded (and judged) rather than missed; it fails if none
// comes within 30s, or if no produce overlaps the window.
func (p *goodProducer) verdict(sched *schedSampler, from, to time.Time) (verdict, error) {
	var window []sample
	ok := poll(30*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := len(p.sample)
		if n == 0 || !p.sample[n-1].start.After(to) {
			return false
		}
		window = window[:0]
		for _, s := range p.sample {
			if !s.start.After(to) && !s.start.Add(s.took).Before(from) {
				window = append(window, s)
			}
		}
		return true
	})
	if !ok {
		return verdict{}, fmt.Errorf("no produce completed within 30s after the window ended (stalled)")
	}
	if len(window) == 0 {
		return verdict{}, fmt.Errorf("no produce during the window [0, %v]", to.Sub(from))
	}
	var v verdict
	lat := make([]time.Duration, 0, len(window))
	for _, s := range window {
		lat = append(lat, s.took)
		at := s.start.Sub(from).Round(time.Millisecond)
		switch {
		case s.err != nil:
			v.bad = append(v.bad, fmt.Sprintf("at +%v: error %v", at, s.err))
		case s.took > maxStall:
			// See sched_test.go: a stall is the gateway's unless the
			// machine demonstrably kept a thread waiting for the excess.
			kw, sw, ok := sched.waited(s.start, s.start.Add(s.took))
			line := fmt.Sprintf("at +%v: took %v; meanwhile a thread of kiggy waited up to %v for a CPU, of the test up to %v (%s)",
				at, s.took.Round(time.Millisecond), kw.Round(time.Millisecond), sw.Round(time.Millisecond), cpuPressure())
			if ok && s.took-max(kw, sw) <= maxStall {
				v.excused = append(v.excused, line)
			} else {
				v.bad = append(v.bad, line)
			}
		}
	}
	slices.Sort(lat)
	v.summary = fmt.Sprintf("%d produces, p50 %v, p99 %v, max %v", len(lat),
		lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*99/100].Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	return v, nil
}

// joinMax joins up to n lines.
func joinMax(lines []string, n int) string {
	s := ""
	for i, l := range lines {
		if i == n {
			return s + fmt.Sprintf("... and %d more\n", len(lines)-n)
		}
		s += l + "\n"
	}
	return s
}

// eventsIn formats the client events in [from, to], relative to origin.
func (p *goodProducer) eventsIn(origin, from, to time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		if !e.at.Before(from) && !e.at.After(to) {
			out = append(out, fmt.Sprintf("at %+v: %s", e.at.Sub(origin).Round(time.Millisecond), e.what))
		}
	}
	if len(out) == 0 {
		out = append(out, "(none: no connect, disconnect, or request slower than 100ms)")
	}
	return out
}

//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kafkawire"
)

// The state floods (docs/LIMITS.md "State clients can create"; groups.go, connections) run beside the
// same well-behaved clients: an acks=all idempotent producer (goodProducer)
// and a consumer group reading what it writes. They must lose nothing; the
// producer's p99 during the flood is logged beside its p99 before it (a
// benchmark figure, not an assertion: the machine is shared).
const (
	steadyTopic = "steady"
	steadyGroup = "steady-group"
)

// backendEnv, set to "iggy", runs the state floods against a real
// iggy-server (internal/testing/iggyserver; KIGGY_IGGY_SERVER) instead of
// the embedded log. The suite's default is the embedded log, to stay fast.
const backendEnv = "KIGGY_TEST_BACKEND"

// startFloodKiggy is startKiggy on the backend backendEnv names.
func startFloodKiggy(t *testing.T, extra ...string) *kiggyProc {
	t.Helper()
	if os.Getenv(backendEnv) == "iggy" {
		n := iggyserver.StartT(t)
		extra = append([]string{"--iggy-addr", n.Addr, "--iggy-username", iggyserver.Username, "--iggy-password", iggyserver.Password}, extra...)
		t.Logf("on iggy-server %s", n.Addr)
	}
	var env []string
	if pinning() {
		// One CPU of its own (pinFlood): one P, as on a 1-CPU server.
		env = []string{"GOMAXPROCS=1"}
	}
	return startKiggyEnv(t, env, extra...)
}

// noQuotaEnv, set to 1, runs the floods that use floodQuota without it:
// the figure the quota is judged against (docs/BENCHMARKS.md "Steady
// clients beside a flood").
const noQuotaEnv = "KIGGY_HOSTILE_NO_QUOTA"

// floodQuota is the request quota the CPU-bound floods run against
// (docs/design/quotas.md): each client (user, client id) may use a fifth
// of one thread, measured over 4 windows of 100 ms. Four, not Kafka's
// default 11: the measured span is at least 300 ms instead of a second,
// so a flood that is over in 400 ms on a fast host (50,000 cheap
// OffsetCommits) has used its quota before it ends. The flood's client id
// is "hostile"; the steady clients' are others, so only the flood is
// throttled.
func floodQuota(t *testing.T) []string {
	if os.Getenv(noQuotaEnv) == "1" {
		t.Logf("no request quota (%s=1)", noQuotaEnv)
		return nil
	}
	return []string{"--quota-request-percentage", "20", "--quota-window-size", "100ms", "--quota-window-num", "4"}
}

// checkThrottled logs how often the quota throttled the flood, when it ran
// with one, and with require checks that it did.
func checkThrottled(t *testing.T, k *kiggyProc, require bool) {
	t.Helper()
	if os.Getenv(noQuotaEnv) == "1" {
		return
	}
	m := k.metrics(t)
	t.Logf("the flood was throttled %v times, %.1f s in all", m["kiggy_quota_throttles_total"], m["kiggy_quota_throttle_seconds_total"])
	if require && m["kiggy_quota_throttles_total"] == 0 {
		t.Errorf("kiggy_quota_throttles_total = 0: the request quota never throttled the flood")
	}
}

// steady is the well-behaved clients beside one flood.
type steady struct {
	k        *kiggyProc
	p        *goodProducer
	cl       *kgo.Client
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	seen     map[int64]bool
	errs     []string
	from, to time.Time // the flood
	// cpu is what kiggy and the test process used over the flood.
	cpu floodCPU
}

// startSteady creates the steady topic, starts the producer and the
// consumer group, and waits until the consumer has read a record.
func startSteady(t *testing.T, k *kiggyProc) *steady {
	t.Helper()
	createTopic(t, k, steadyTopic, 1)
	s := &steady{k: k, seen: map[int64]bool{}, done: make(chan struct{})}
	s.p = startProducerProcess(t, k.Addr, steadyTopic)
	pinFlood(t, k.Pid, s.p.pid)
	var err error
	s.cl, err = kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.ConsumerGroup(steadyGroup), kgo.ConsumeTopics(steadyTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond), kgo.ClientID("steady-consumer"))
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go s.consume(ctx)
	t.Cleanup(s.stop)
	waitFor(t, 30*time.Second, "the steady consumer group's first records", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.seen) > 0
	})
	time.Sleep(time.Second) // the producer's latency before the flood: the baseline of its p99
	return s
}

func (s *steady) consume(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		fs := s.cl.PollFetches(ctx)
		s.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				s.errs = append(s.errs, fmt.Sprintf("%s/%d: %v", topic, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) { s.seen[r.Offset] = true })
		s.mu.Unlock()
	}
}

func (s *steady) stop() {
	s.cancel()
	<-s.done
	s.cl.Close()
}

// flood runs f as the flood, timing it and measuring what kiggy and the
// test process used of the CPUs meanwhile.
func (s *steady) flood(f func()) {
	at := cpuNow(s.k.Pid, s.p.pid)
	s.from = time.Now()
	f()
	s.to = time.Now()
	s.cpu = cpuNow(s.k.Pid, s.p.pid).since(at)
}

// check stops the producer and checks that it saw no error, that its topic
// holds every record it had acknowledged, and that the consumer group read
// every stored record; it logs the producer's p99 before and during the
// flood.
func (s *steady) check(t *testing.T) {
	t.Helper()
	s.k.alive(t)
	s.p.stop()
	before, during := s.p99(time.Time{}, s.from), s.p99(s.from, s.to)
	t.Logf("steady producer p99: %v before the flood, %v during it (%.1fx)", before.Round(10*time.Microsecond),
		during.Round(10*time.Microsecond), float64(during)/float64(max(before, time.Microsecond)))
	t.Logf("over the flood's %v: %s", s.to.Sub(s.from).Round(time.Millisecond), s.cpu.String(s.to.Sub(s.from)))
	floodCheckGoodTopic(t, s.k, s.p, steadyTopic)
	end := endOffset(t, s.k.Addr, steadyTopic)
	var missing int64
	ok := poll(30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		missing = 0
		for o := range end {
			if !s.seen[o] {
				missing++
			}
		}
		return missing == 0
	})
	s.stop()
	if !ok {
		t.Errorf("the steady consumer group did not read %d of the %d stored records within 30 s", missing, end)
	}
	if len(s.errs) > 0 {
		t.Errorf("steady consumer saw %d fetch errors: %v", len(s.errs), s.errs[:min(len(s.errs), 5)])
	}
	t.Logf("steady consumer group read all %d records", end)
}

// p99 is the producer's 99th percentile latency over produces started in
// [from, to).
func (s *steady) p99(from, to time.Time) time.Duration {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	var lat []time.Duration
	for _, x := range s.p.sample {
		if !x.start.Before(from) && x.start.Before(to) {
			lat = append(lat, x.took)
		}
	}
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100]
}

// floodCheckGoodTopic is floodCheckGood for the producer's topic.
func floodCheckGoodTopic(t *testing.T, k *kiggyProc, good *goodProducer, topic string) {
	t.Helper()
	good.mu.Lock()
	var errs []string
	for _, s := range good.sample {
		if s.err != nil {
			errs = append(errs, s.err.Error())
		}
	}
	good.mu.Unlock()
	acked, unsure := good.acked(), good.unsure()
	stored := endOffset(t, k.Addr, topic)
	t.Logf("steady producer: %d records acknowledged, %d in doubt at stop, %d stored", acked, unsure, stored)
	if len(errs) > 0 {
		t.Errorf("steady producer saw %d errors: %v", len(errs), errs[:min(len(errs), 5)])
	}
	if stored < acked || stored > acked+unsure {
		t.Errorf("steady topic holds %d records, want %d acknowledged (+%d in doubt)", stored, acked, unsure)
	}
}

// createTopic creates topic with partitions on k, through an admin client
// of its own.
func createTopic(t *testing.T, k *kiggyProc, topic string, partitions int32) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(k.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	resp, err := kadm.NewClient(admin).CreateTopic(ctxFor(t, 30*time.Second), partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// pipelined sends n requests, build(i) the i-th, over conns connections
// from local (an IP address; "" = any), at most depth in flight on each,
// and passes each response to tally, one at a time.
func pipelined(t *testing.T, addr, local string, n, conns, depth int, build func(i int) kmsg.Request, tally func(kmsg.Response)) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kc, err := dialFrom(addr, local)
			if err != nil {
				t.Errorf("flood dial: %v", err)
				return
			}
			defer kc.Close()
			type sent struct {
				corr int32
				resp kmsg.Response
			}
			var inflight []sent
			recv := func() bool {
				s := inflight[0]
				inflight = inflight[1:]
				if err := kc.Recv(s.corr, s.resp); err != nil {
					t.Errorf("flood answer: %v", err)
					return false
				}
				mu.Lock()
				tally(s.resp)
				mu.Unlock()
				return true
			}
			for i := c; i < n; i += conns {
				req := build(i)
				corr, err := kc.Send(req)
				if err != nil {
					t.Errorf("flood request: %v", err)
					return
				}
				resp := req.ResponseKind()
				resp.SetVersion(req.GetVersion())
				inflight = append(inflight, sent{corr, resp})
				if len(inflight) == depth && !recv() {
					return
				}
			}
			for len(inflight) > 0 && recv() {
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// dialFrom connects to addr from the local IP address (any when "").
func dialFrom(addr, local string) (*kafkawire.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return kafkawire.NewConn(c, "hostile"), nil
}

// groupsRefused returns kiggy_groups_refused_total{reason}.
func (m metrics) groupsRefused(reason string) float64 {
	return m[`kiggy_groups_refused_total{reason="`+reason+`"}`]
}

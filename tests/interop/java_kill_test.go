package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestVerifiableProducerSurvivesKill9: an idempotent Java VerifiableProducer
// writes through a kiggy process on the Iggy backend (an in-process iggytest
// server, which outlives the gateway and answers each write 200 ms after
// storing it); kiggy is killed with SIGKILL in the
// middle of the run and started again on the same port. The producer
// reconnects and resends its unacknowledged batches with their sequences;
// the new kiggy rebuilds each producer's window from the producer stamps in
// the partition's tail. Afterwards every value the producer saw
// acknowledged is stored exactly once, and no value is stored twice. kiggy
// only.
func TestVerifiableProducerSurvivesKill9(t *testing.T) {
	testtools.JavaClasspath(t)
	if os.Getenv(TargetEnv) == "kafka" {
		t.Skip("kiggy only: kills the gateway process")
	}
	// Replies come 200 ms after the write, so at the kill some batches are
	// stored but not yet acknowledged: their resends must be recognised.
	srv := iggytest.New(iggytest.Config{Latency: 200 * time.Millisecond})
	if _, err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	reader := kiggytest.Start(t, kiggytest.Options{IggyServer: srv})
	topic := topicName(t)
	reader.CreateTopic(t, topic, 1)

	addr := freeAddr(t)
	first := startKiggyProcess(t, addr, srv.Addr().String())

	props := filepath.Join(t.TempDir(), "producer.properties")
	if err := os.WriteFile(props, []byte("enable.idempotence=true\nretries=2147483647\nmax.in.flight.requests.per.connection=5\n"+
		"request.timeout.ms=5000\ndelivery.timeout.ms=120000\nreconnect.backoff.ms=100\nreconnect.backoff.max.ms=500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 6000
	done := make(chan result, 1)
	go func() {
		done <- runJava(t, 3*time.Minute, nil, "", "org.apache.kafka.tools.VerifiableProducer",
			"--bootstrap-server", addr, "--topic", topic, "--max-messages", fmt.Sprint(n),
			"--throughput", "1000", "--acks", "-1", "--producer.config", props)
	}()

	// Kill once a good part of the run is stored, while the rest is in
	// flight or not sent yet.
	waitStored(t, reader, topic, n/4, 90*time.Second)
	first.Kill()
	killedAt := stored(t, reader, topic)
	time.Sleep(time.Second) // the gateway stays down for a second: the producer must retry through it
	startKiggyProcess(t, addr, srv.Addr().String())
	r := <-done
	if r.code != 0 {
		t.Fatalf("VerifiableProducer failed:\n%s", r)
	}

	acked, failed := map[string]bool{}, 0
	for line := range strings.Lines(r.stdout) {
		var ev struct{ Name, Value string }
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Name {
		case "producer_send_success":
			acked[ev.Value] = true
		case "producer_send_error":
			failed++
		}
	}
	count := map[string]int{}
	for _, rec := range reader.Records(t, topic, 0) {
		count[string(rec.Value)]++
	}
	missing, twice := 0, 0
	for v := range acked {
		if count[v] != 1 {
			missing++
		}
	}
	for _, c := range count {
		if c > 1 {
			twice++
		}
	}
	t.Logf("killed with %d records stored; %d acknowledged, %d failed, %d distinct values stored", killedAt, len(acked), failed, len(count))
	if len(acked) == 0 || missing > 0 || twice > 0 {
		t.Fatalf("after kill -9: %d acknowledged values not stored exactly once, %d values stored more than once", missing, twice)
	}
	if len(acked)+failed != n {
		t.Errorf("the producer reported %d outcomes for %d records", len(acked)+failed, n)
	}
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startKiggyProcess runs kiggy on addr over the Iggy server at iggyAddr and
// waits until it listens; it is stopped when the test ends.
func startKiggyProcess(t *testing.T, addr, iggyAddr string) *kiggyproc.Proc {
	t.Helper()
	return kiggyproc.Start(t, kiggyproc.Config{
		Args: []string{"--listen", addr, "--admin-addr", "", "--iggy-addr", iggyAddr, "--drain-timeout", "2s"},
	})
}

// stored returns how many records topic's partition 0 holds.
func stored(t *testing.T, g *kiggytest.Gateway, topic string) int64 {
	t.Helper()
	wm, err := g.Log.Watermarks(context.Background(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return wm.High
}

// waitStored waits until topic's partition 0 holds at least n records.
func waitStored(t *testing.T, g *kiggytest.Gateway, topic string, n int64, timeout time.Duration) {
	t.Helper()
	if !testtools.Eventually(timeout, func() bool { return stored(t, g, topic) >= n }) {
		t.Fatalf("only %d of %d records stored within %v", stored(t, g, topic), n, timeout)
	}
}

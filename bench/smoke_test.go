package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestSmoke runs kbench's smoke mode: every target (a real Kafka broker,
// kiggy on memlog, kiggy on Iggy via iggytest, the null broker) started as a
// process, a small franz-go load for a few seconds with a rate-limited run,
// everything read back and counted, and kafka-producer-perf-test against
// Kafka and kiggy. It keeps the harness working; its figures mean nothing.
// It needs Java and the Kafka jars (skipped without them, failed under
// KIGGY_REQUIRE_TOOLS=1).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a Kafka JVM and three servers (-short)")
	}
	testtools.JavaClasspath(t)

	cfg := SmokeConfig()
	cfg.Log = testLog{t}
	cfg.WorkDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if rep != nil {
		var b strings.Builder
		rep.Print(&b)
		t.Logf("report:\n%s", b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke run took %v", time.Since(start).Round(time.Millisecond))
	if rep.Failed() {
		t.Fatalf("targets failed:\n%s", strings.Join(rep.Failures, "\n"))
	}

	if len(rep.Loads) != 1 {
		t.Fatalf("%d loads, want 1", len(rep.Loads))
	}
	lr := rep.Loads[0]
	for _, target := range AllTargets {
		row := findRow(&lr, target, ClientFranz, ModeMax)
		if row == nil {
			if target == TargetKiggyIggy {
				// The Iggy path may not be wired into cmd/kiggy yet; the
				// harness must then say so instead of failing.
				for _, r := range lr.Rows {
					if r.Target == target && r.Status == StatusUnavailable {
						t.Logf("kiggy-iggy unavailable: %s", r.Error)
					}
				}
				continue
			}
			t.Fatalf("no franz-go max row for %s", target)
		}
		// Figures are not checked: on a busy machine a 2 s window may see
		// no acknowledgement at all. That records were acknowledged and
		// all read back is what the smoke run asserts.
		if row.Acked <= 0 {
			t.Errorf("%s: nothing acknowledged", target)
		}
		if row.PeakRSSMiB == nil || *row.PeakRSSMiB <= 0 {
			t.Errorf("%s: no peak RSS", target)
		}
		// CPU per GB needs bytes acknowledged inside the window (seen on a
		// loaded CI machine: Kafka acknowledged 8,194 records, none in its
		// 2 s window).
		if row.ServerCPUPerGB == nil && row.ProduceRecordsPerSec > 0 {
			t.Errorf("%s: no server CPU per GB", target)
		}
		if target == TargetNull {
			if row.ConsumeRecordsPerSec != nil {
				t.Errorf("null broker has a consume rate")
			}
			continue
		}
		if row.Consumed != row.Acked || row.ConsumeRecordsPerSec == nil {
			t.Errorf("%s: consumed %d of %d acknowledged", target, row.Consumed, row.Acked)
		}
		if rr := findRow(&lr, target, ClientFranz, ModeRate); rr == nil || rr.Acked <= 0 || rr.Consumed != rr.Acked {
			t.Errorf("%s: no rate-limited run, or not all of it read back", target)
		}
	}
	for _, target := range []string{TargetKafka, TargetKiggy} {
		if row := findRow(&lr, target, ClientJava, ModeMax); row == nil || row.ProduceRecordsPerSec <= 0 || row.Runs[0].Records != cfg.JavaRecords {
			t.Errorf("%s: no kafka-producer-perf-test result", target)
		}
	}
	if len(lr.Ratios) == 0 {
		t.Error("no ratios")
	}

	// The JSON report must be written and read back.
	path := filepath.Join(t.TempDir(), "kbench.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	if len(back.Loads) != 1 || len(back.Loads[0].Rows) != len(lr.Rows) {
		t.Fatalf("JSON round trip lost rows")
	}
}

// testLog sends the harness's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

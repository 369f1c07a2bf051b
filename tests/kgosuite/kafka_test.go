package kgosuite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// kafkaEnv turns on TestKnownGapsOnKafka.
const kafkaEnv = "KIGGY_KGOSUITE_KAFKA"

// TestKnownGapsOnKafka runs the KnownGaps tests (or KIGGY_KGOSUITE_RUN's)
// against a real Apache Kafka 4.x broker (internal/testing/kafkatest, the jars of
// tests/java/lib) and wants each to pass: a gap is kiggy's, not a test that
// fails anywhere. It runs only with KIGGY_KGOSUITE_KAFKA=1; CI does not
// depend on Kafka for this package.
func TestKnownGapsOnKafka(t *testing.T) {
	if os.Getenv(kafkaEnv) != "1" {
		t.Skipf("skipping: set %s=1 to run KnownGaps against Apache Kafka 4.x", kafkaEnv)
	}
	lockRun(t)
	dir := t.TempDir()
	suiteBin, srcDir := buildSuite(t, dir)
	jars, _ := filepath.Glob(filepath.Join(testtools.Root(t), testtools.JavaLib, "kafka_2.13-*.jar"))
	b := kafkatest.Start(t)
	t.Logf("Kafka %s at %s", strings.Join(jars, ", "), b.Addr)

	run := os.Getenv(runEnv)
	if run == "" {
		run = skipPattern() // the gaps by name
	}
	r := suiteRun{name: "kafka", bin: suiteBin, dir: srcDir, seeds: b.Addr, run: run, keepGaps: true,
		records: os.Getenv(recordsEnv), out: filepath.Join(outputDir(t, dir), "kgo-kafka.out"), timeout: suiteTimeout}
	res, _ := r.check(t)
	if os.Getenv(runEnv) != "" {
		return
	}
	for _, g := range KnownGaps {
		if s := res.status[g.Test]; s != pass {
			t.Errorf("%s did not pass on Kafka (%q): it is not a kiggy gap", g.Test, s)
		}
	}
}

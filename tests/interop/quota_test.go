package interop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/internal/testing/kafkatest"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
	"github.com/kiggy-io/kiggy/quota"
)

// TestConfigCommandQuotas: kafka-configs (Java 4.x) --describe of the
// default IP entity and of the default user and client id prints the
// quotas kiggy was started with (--connection-creation-rate-per-ip 40,
// --quota-request-percentage 25, --quota-producer-byte-rate 1 MiB,
// --quota-consumer-byte-rate 2 MiB, --quota-controller-mutation-rate 10),
// and nothing for a named IP. With
// KIGGY_INTEROP_TARGET=kafka a Kafka 4.4 broker of its own gets the same
// quotas from kafka-configs --alter first: what the tool prints for them
// is the expectation.
func TestConfigCommandQuotas(t *testing.T) {
	testtools.JavaClasspath(t)
	var addr string
	configs := func(args ...string) result {
		return runJava(t, 2*time.Minute, nil, "", configCommand, append([]string{"--bootstrap-server", addr}, args...)...)
	}
	if os.Getenv(TargetEnv) == "kafka" {
		addr = kafkatest.StartConfig(t, kafkatest.Config{}).Addr
		for _, args := range [][]string{
			{"--alter", "--entity-type", "ips", "--entity-default", "--add-config", "connection_creation_rate=40"},
			{"--alter", "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default", "--add-config",
				"request_percentage=25,producer_byte_rate=1048576,consumer_byte_rate=2097152,controller_mutation_rate=10"},
		} {
			if r := configs(args...); r.code != 0 {
				t.Fatalf("kafka-configs %v:\n%s", args, r)
			}
		}
	} else {
		addr = kiggytest.Start(t, kiggytest.Options{
			Bridge: bridge.Config{Quota: quota.Config{RequestPercentage: 25},
				ProducerByteRate: 1 << 20, ConsumerByteRate: 2 << 20, ControllerMutationRate: 10},
			EngineConfig: engine.Config{ConnectionCreationRatePerIP: 40},
		}).Addr
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--entity-type", "ips", "--entity-default"}, "Quota configs for the default ip are connection_creation_rate=40.0\n"},
		{[]string{"--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"}, "Quota configs for the default user-principal, the default client-id are producer_byte_rate=1048576.0, consumer_byte_rate=2097152.0, controller_mutation_rate=10.0, request_percentage=25.0\n"},
	} {
		describeQuotas(t, configs, c.args, c.want)
	}
	if r := configs("--describe", "--entity-type", "ips", "--entity-name", "10.0.0.1"); r.code != 0 || strings.Contains(r.stdout, "connection_creation_rate") {
		t.Errorf("kafka-configs --describe of ip 10.0.0.1: want no quota:\n%s", r)
	}
}

// TestTopicCommandUnderMutationQuota: under a controller mutation quota
// of 0.5 partitions a second (KIP-599; a burst of 5.5 over 11 windows of
// 1 s), kafka-topics (Java 4.x) --create of a 10-partition topic is
// admitted and leaves its client (adminclient-1, the id every such JVM
// uses) owing 9 s; the next --create, a moment later, is refused: the
// tool, which asks the admin client not to retry on a quota violation,
// fails with Kafka's ThrottlingQuotaExceededException message, and the
// topic does not exist. With KIGGY_INTEROP_TARGET=kafka a Kafka 4.4
// broker of its own gets the same quota from kafka-configs --alter first.
func TestTopicCommandUnderMutationQuota(t *testing.T) {
	testtools.JavaClasspath(t)
	var tg target
	if os.Getenv(TargetEnv) == "kafka" {
		k := kafkatest.StartConfig(t, kafkatest.Config{})
		tg = &kafkaTarget{b: k}
		alterDefaultClientQuotas(t, k.Addr, "controller_mutation_rate=0.5")
	} else {
		tg = &kiggyTarget{g: kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{ControllerMutationRate: 0.5}})}
	}
	topicCommandCreate(t, tg, "mq-big", 10)
	r := adminTool(t, tg, topicCommand, "--create", "--topic", "mq-next", "--partitions", "1")
	const want = "The throttling quota has been exceeded."
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, want) {
		t.Fatalf("kafka-topics --create right after 10 partitions: want a failure saying %q:\n%s", want, r)
	}
	t.Logf("kafka-topics --create over the quota: %s", strings.TrimSpace(r.stdout+r.stderr))
	if r := adminTool(t, tg, topicCommand, "--describe", "--topic", "mq-next"); r.code == 0 {
		t.Fatalf("kafka-topics --describe of the refused topic: want it missing:\n%s", r)
	}
}

// TestJavaClientsUnderByteRates: the Java 4.x console producer and console
// consumer move about 1 MB of incompressible lines through producer and
// consumer byte rates of 256 KiB a second (Kafka's producer_byte_rate and
// consumer_byte_rate of the default user and client id; windows of 100 ms
// on kiggy): both finish and
// every line arrives once, in order (one partition): the producer honours
// the throttle_time_ms of its Produce responses, and the consumer (fetch
// sessions on) the empty throttled Fetch responses. On kiggy the metrics
// show that both were throttled. With KIGGY_INTEROP_TARGET=kafka a Kafka
// 4.4 broker of its own gets the same quotas from kafka-configs --alter.
func TestJavaClientsUnderByteRates(t *testing.T) {
	testtools.JavaClasspath(t)
	const rate = 256 << 10
	var tg target
	var gw *kiggytest.Gateway
	if os.Getenv(TargetEnv) == "kafka" {
		// Kafka's windows are whole seconds: 11 of 1 s, so the first 10 s
		// average what is sent; the data is sized for kiggy's 100 ms
		// windows, and Kafka throttles it less (or not at all).
		k := kafkatest.StartConfig(t, kafkatest.Config{})
		tg = &kafkaTarget{b: k}
		alterDefaultClientQuotas(t, k.Addr, fmt.Sprintf("producer_byte_rate=%d,consumer_byte_rate=%d", rate, rate))
	} else {
		// 11 windows of 100 ms: the rate is measured over a second or
		// more, so 1 MB is throttled within a few seconds.
		gw = kiggytest.Start(t, kiggytest.Options{Bridge: bridge.Config{ProducerByteRate: rate, ConsumerByteRate: rate,
			Quota: quota.Config{Samples: 11, Window: 100 * time.Millisecond}}})
		tg = &kiggyTarget{g: gw}
	}
	topic := topicName(t)
	tg.CreateTopic(t, topic, 1)
	rng := rand.New(rand.NewPCG(5, 6))
	var in bytes.Buffer
	var want []string
	for i := range 1000 {
		raw := make([]byte, 500)
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		line := fmt.Sprintf("%04d-%x", i, raw)
		want = append(want, line)
		in.WriteString(line + "\n")
	}
	start := time.Now()
	r := runJava(t, 3*time.Minute, in.Bytes(), "", "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", tg.Addr(), "--topic", topic)
	if r.code != 0 || strings.Contains(r.stderr, "ERROR") {
		t.Fatalf("ConsoleProducer:\n%s", r)
	}
	produced := time.Since(start)
	start = time.Now()
	r = runJava(t, 3*time.Minute, nil, "", consoleConsumer, "--bootstrap-server", tg.Addr(), "--topic", topic,
		"--from-beginning", "--max-messages", fmt.Sprint(len(want)))
	if r.code != 0 {
		t.Fatalf("ConsoleConsumer:\n%s", r)
	}
	sameLines(t, "ConsoleConsumer under the consumer byte rate", strings.Fields(r.stdout), want)
	t.Logf("%s: produced in %v, consumed in %v (each about 1 MB at %d KiB/s)", tg.Name(), produced.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), rate>>10)
	if gw != nil {
		m := gw.Metrics()
		for _, name := range []string{"kiggy_quota_produce_throttles_total", "kiggy_quota_fetch_throttles_total"} {
			if v := metricValue(t, m, name); v == 0 {
				t.Errorf("%s = 0: the Java client was never throttled", name)
			}
		}
	}
}

// alterDefaultClientQuotas sets configs (k=v,…) on a Kafka broker's
// default user and client id with kafka-configs --alter, and waits until
// --describe shows every one: Kafka applies quota changes through its
// metadata log.
func alterDefaultClientQuotas(t *testing.T, addr, configs string) {
	t.Helper()
	entity := []string{"--bootstrap-server", addr, "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"}
	if r := runJava(t, 2*time.Minute, nil, "", configCommand, append(entity, "--alter", "--add-config", configs)...); r.code != 0 {
		t.Fatalf("kafka-configs --alter %s:\n%s", configs, r)
	}
	if !testtools.EventuallyEvery(20*time.Second, 500*time.Millisecond, func() bool {
		r := runJava(t, 2*time.Minute, nil, "", configCommand, append(entity, "--describe")...)
		for kv := range strings.SplitSeq(configs, ",") {
			if k, _, _ := strings.Cut(kv, "="); r.code != 0 || !strings.Contains(r.stdout, k+"=") {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("kafka-configs --describe never showed %s", configs)
	}
}

// TestConfigCommandAltersQuotas: kafka-configs (Java 4.x) --alter sets and
// deletes quotas of named users, client ids, user and client-id pairs and
// IPs (AlterClientQuotas), and --describe prints each entity's as Kafka
// 4.4 prints them; a fractional byte rate is refused with Kafka's message.
// With KIGGY_INTEROP_TARGET=kafka the same commands run against a Kafka
// 4.4 broker of its own.
func TestConfigCommandAltersQuotas(t *testing.T) {
	testtools.JavaClasspath(t)
	var addr string
	if os.Getenv(TargetEnv) == "kafka" {
		addr = kafkatest.StartConfig(t, kafkatest.Config{}).Addr
	} else {
		addr = kiggytest.Start(t, kiggytest.Options{}).Addr
	}
	configs := func(args ...string) result {
		return runJava(t, 2*time.Minute, nil, "", configCommand, append([]string{"--bootstrap-server", addr}, args...)...)
	}
	alice := []string{"--entity-type", "users", "--entity-name", "alice"}
	app := []string{"--entity-type", "clients", "--entity-name", "app-1"}
	ip := []string{"--entity-type", "ips", "--entity-name", "10.0.0.1"}
	for _, args := range [][]string{
		append(alice, "--add-config", "producer_byte_rate=1024,request_percentage=50"),
		append(app, "--add-config", "consumer_byte_rate=2048"),
		append(append(alice, app...), "--add-config", "controller_mutation_rate=5"),
		append(ip, "--add-config", "connection_creation_rate=7"),
		append(alice, "--delete-config", "request_percentage"),
	} {
		if r := configs(append([]string{"--alter"}, args...)...); r.code != 0 {
			t.Fatalf("kafka-configs --alter %v:\n%s", args, r)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{alice, "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0\n"},
		{app, "Quota configs for client-id 'app-1' are consumer_byte_rate=2048.0\n"},
		{append(alice, app...), "Quota configs for user-principal 'alice', client-id 'app-1' are controller_mutation_rate=5.0\n"},
		{ip, "Quota configs for ip '10.0.0.1' are connection_creation_rate=7.0\n"},
		{[]string{"--entity-type", "clients"}, "Quota configs for client-id 'app-1' are consumer_byte_rate=2048.0\n"},
	} {
		describeQuotas(t, configs, c.args, c.want)
	}
	r := configs(append([]string{"--alter"}, append(app, "--add-config", "producer_byte_rate=1.5")...)...)
	t.Logf("fractional: %s", r)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "producer_byte_rate cannot be a fractional value.") {
		t.Errorf("kafka-configs --alter producer_byte_rate=1.5: want a failure with Kafka's message:\n%s", r)
	}
}

// describeQuotas runs kafka-configs --describe of args until it prints
// want (Kafka applies quota changes through its metadata log: it is given
// a moment), and fails the test if it never does.
func describeQuotas(t *testing.T, configs func(...string) result, args []string, want string) {
	t.Helper()
	var r result
	testtools.EventuallyEvery(20*time.Second, 500*time.Millisecond, func() bool {
		r = configs(append([]string{"--describe"}, args...)...)
		return r.code == 0 && r.stdout == want
	})
	if r.code != 0 || r.stdout != want {
		t.Errorf("kafka-configs --describe %v: want %q:\n%s", args, want, r)
	}
	t.Logf("kafka-configs --describe %v: %s", args, strings.TrimSpace(r.stdout))
}

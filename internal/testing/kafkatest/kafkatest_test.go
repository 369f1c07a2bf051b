package kafkatest

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestBroker starts a real broker, round-trips a record through it with
// franz-go, and checks that Stop leaves no JVM behind.
func TestBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a JVM (-short)")
	}
	b := Start(t)
	if !strings.HasPrefix(b.Addr, "127.0.0.1:") || !strings.HasPrefix(b.ControllerAddr, "127.0.0.1:") {
		t.Fatalf("broker listens on %s / %s, want 127.0.0.1", b.Addr, b.ControllerAddr)
	}
	if b.Pid <= 0 {
		t.Fatalf("Pid = %d", b.Pid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"kafkatest": {0: kgo.NewOffset().AtStart()},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// On a loaded machine the client may resend a CreateTopics the broker
	// was still processing; the retry then finds the topic.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "kafkatest"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kafkatest", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Key) != "k" || string(recs[0].Value) != "v" || recs[0].Offset != 0 {
		t.Fatalf("read back %+v", recs)
	}
	cl.Close()

	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Exited():
	default:
		t.Fatal("Stop returned before the JVM exited")
	}
	if err := syscall.Kill(b.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d after Stop: kill(0) = %v, want ESRCH", b.Pid, err)
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestStartProcessBadClasspath checks that a broker that cannot start is
// reported with its output instead of being waited for.
func TestStartProcessBadClasspath(t *testing.T) {
	java := func() string {
		java, _ := testtools.JavaClasspath(t)
		return java
	}()
	start := time.Now()
	_, err := StartProcess(t.TempDir(), Config{Java: java, Classpath: t.TempDir(), StartTimeout: time.Minute})
	if err == nil {
		t.Fatal("StartProcess with an empty classpath succeeded")
	}
	if !strings.Contains(err.Error(), "StorageTool") {
		t.Fatalf("error does not say what failed: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("failing start took %v", d)
	}
}

func TestConfigRejectsFixedProps(t *testing.T) {
	cfg := Config{Java: "java", Classpath: "x", Props: map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092"}}
	if err := cfg.normalize(); err == nil {
		t.Fatal("overriding listeners was accepted")
	}
}

func TestProperties(t *testing.T) {
	b := &Broker{Addr: "127.0.0.1:1", ControllerAddr: "127.0.0.1:2", cfg: Config{Props: map[string]string{
		"message.max.bytes": "1000", "num.partitions": "3",
	}}}
	got := string(b.properties("/d"))
	for _, want := range []string{
		"\nlisteners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2\n",
		"\nadvertised.listeners=PLAINTEXT://127.0.0.1:1\n",
		"\ncontroller.quorum.voters=1@127.0.0.1:2\n",
		"\nmessage.max.bytes=1000\n",
		"\nnum.partitions=3\n",
		"\noffsets.topic.replication.factor=1\n",
		"\nlog.dirs=/d\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, got)
		}
	}
	if id, err := clusterID(); err != nil || len(id) != 22 {
		t.Errorf("clusterID() = %q, %v; want 22 characters", id, err)
	}
}

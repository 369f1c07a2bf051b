package ecosystem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestConnectSourceToSink runs a Kafka Connect 4.4 distributed worker
// (org.apache.kafka.connect.cli.ConnectDistributed: its config, offset and
// status topics are compacted topics it creates itself) with two
// connectors of tests/java/src/kiggy/ecosystem: SeqSourceConnector writes
// key-i/value-i, i = 0..299, to a topic, and FileSinkConnector appends that
// topic to a file. The sink's file must equal the source's records, and so
// must the topic. Then the worker is stopped (SIGTERM: Connect commits its
// source offsets and the sink's consumer offsets as it stops), a new worker
// starts from the same internal topics, and the source's count is raised to
// 600 over the REST API: the source must resume at 300 and the sink after
// the last record it had, so the file and the topic hold 0..599 once each
// (Connect is at-least-once, but a clean stop leaves nothing to redo).
func TestConnectSourceToSink(t *testing.T) {
	t.Parallel()
	javaClasses(t)
	forEachTarget(t, func(t *testing.T, tg target) {
		start := time.Now()
		app := uniqueName(t, "connect")
		data := app + "-data"
		createTopic(t, tg, data, 1, nil)
		out := filepath.Join(t.TempDir(), "sink.txt")
		dir := t.TempDir()

		w := startWorker(t, tg, app, dir)
		w.post(t, "/connectors", map[string]any{
			"name": "seq",
			"config": map[string]string{
				"connector.class": "kiggy.ecosystem.SeqSourceConnector",
				"tasks.max":       "1",
				"topic":           data,
				"count":           "300",
			},
		})
		w.post(t, "/connectors", map[string]any{
			"name": "file",
			"config": map[string]string{
				"connector.class": "kiggy.ecosystem.FileSinkConnector",
				"tasks.max":       "1",
				"topics":          data,
				"file":            out,
			},
		})
		waitSinkLines(t, tg, w, out, 300)
		checkConnectTopics(t, tg, app)
		w.stop(t)
		t.Logf("%s: first worker done after %v", tg.name, time.Since(start).Round(time.Millisecond))

		w = startWorker(t, tg, app, dir)
		w.put(t, "/connectors/seq/config", map[string]string{
			"connector.class": "kiggy.ecosystem.SeqSourceConnector",
			"tasks.max":       "1",
			"topic":           data,
			"count":           "600",
		})
		waitSinkLines(t, tg, w, out, 600)
		// A negative check: anything extra (a duplicate) gets a second to
		// reach the sink; checkSeq below says what it was.
		testtools.Consistently(time.Second, func() bool { return len(sinkValues(t, out)) <= 600 })
		w.stop(t)

		checkSeq(t, tg, "the topic", topicValues(t, tg, data), 600)
		checkSeq(t, tg, "the sink's file", sinkValues(t, out), 600)
		t.Logf("%s: %v in all", tg.name, time.Since(start).Round(time.Millisecond))
	})
}

// worker is a running Connect distributed worker and its REST address.
type worker struct {
	*proc
	tg   target
	rest string
}

// startWorker starts a ConnectDistributed worker of group app with our
// connectors on its classpath and waits until its REST API answers.
//
// The REST port is picked free and then bound by the JVM a second or so
// later; another process may take it between the two (CI saw "Failed to
// bind" once), so a worker that exits on that is started again on a new
// port, up to three times.
func startWorker(t *testing.T, tg target, app, dir string) *worker {
	t.Helper()
	for attempt := 1; ; attempt++ {
		w, lostPort := tryStartWorker(t, tg, app, dir)
		if !lostPort {
			return w
		}
		if attempt == 3 {
			t.Fatalf("%s: the Connect worker lost its REST port to another process three times\n%s", tg.name, w.describe())
		}
		t.Logf("%s: the Connect worker's REST port %s was taken before it bound; starting it again", tg.name, w.rest)
	}
}

// tryStartWorker starts one worker; lostPort reports that it exited
// because its REST port was taken before it could bind it.
func tryStartWorker(t *testing.T, tg target, app, dir string) (w *worker, lostPort bool) {
	t.Helper()
	port := freePort(t)
	props := map[string]string{
		"bootstrap.servers":                 tg.addr,
		"group.id":                          app,
		"config.storage.topic":              app + "-configs",
		"offset.storage.topic":              app + "-offsets",
		"status.storage.topic":              app + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "2",
		"status.storage.partitions":         "1",
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms":          "500",
		"listeners":                         "http://127.0.0.1:" + strconv.Itoa(port),
		"rest.advertised.host.name":         "127.0.0.1",
		"rest.advertised.port":              strconv.Itoa(port),
		"plugin.discovery":                  "service_load",
		"scheduled.rebalance.max.delay.ms":  "0",
		"task.shutdown.graceful.timeout.ms": "10000",
		"consumer.session.timeout.ms":       "10000",
		"consumer.heartbeat.interval.ms":    "1000",
		"consumer.metadata.max.age.ms":      "2000",
		"consumer.fetch.max.wait.ms":        "200",
		"offset.flush.timeout.ms":           "5000",
		"worker.sync.timeout.ms":            "3000",
		"session.timeout.ms":                "10000",
		"heartbeat.interval.ms":             "1000",
	}
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	path := filepath.Join(dir, fmt.Sprintf("worker-%d.properties", port))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startJava(t, "org.apache.kafka.connect.cli.ConnectDistributed", path)
	p.beforeFail = func() { skipIfConfigRefused(t, tg, p) }
	w = &worker{proc: p, tg: tg, rest: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// The root answers once the REST server is up; /connectors once the
	// worker has joined its group and read the config topic.
	up := false
	testtools.EventuallyEvery(90*time.Second, 200*time.Millisecond, func() bool {
		code, _ := w.get("/connectors")
		up = code == http.StatusOK
		return up || p.exited()
	})
	if !up {
		if p.exited() && strings.Contains(p.stderr(), "BindException: Address already in use") {
			return w, true
		}
		p.fail()
		t.Fatalf("%s: the Connect worker's REST API at %s did not answer (exited %v)\n%s", tg.name, w.rest, p.exited(), p.describe())
	}
	return w, false
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := testtools.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func (w *worker) get(path string) (int, string) {
	resp, err := http.Get(w.rest + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (w *worker) send(t *testing.T, method, path string, body any) {
	t.Helper()
	js, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var code int
	var msg string
	testtools.EventuallyEvery(30*time.Second, 500*time.Millisecond, func() bool {
		req, _ := http.NewRequest(method, w.rest+path, bytes.NewReader(js))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		code = 0
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, msg = resp.StatusCode, string(b)
		} else {
			msg = err.Error()
		}
		// 409: a rebalance is in progress; try again.
		return code != http.StatusConflict
	})
	if code/100 != 2 {
		w.fail()
		t.Fatalf("%s: %s %s: %d %s\n%s", w.tg.name, method, path, code, msg, w.describe())
	}
}

func (w *worker) post(t *testing.T, path string, body any) { t.Helper(); w.send(t, "POST", path, body) }
func (w *worker) put(t *testing.T, path string, body any)  { t.Helper(); w.send(t, "PUT", path, body) }

// stop sends SIGTERM (Connect's shutdown hook stops the connectors,
// committing their offsets) and waits for the JVM to exit.
func (w *worker) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	err := w.wait(60 * time.Second)
	// SIGTERM ends the JVM with 143 after the shutdown hooks ran.
	if err != nil && !strings.Contains(err.Error(), "143") && !strings.Contains(err.Error(), "terminated") {
		t.Errorf("%s: the Connect worker exited with %v on SIGTERM\n%s", w.tg.name, err, w.describe())
	}
}

// waitSinkLines waits until the sink's file has at least n lines.
func waitSinkLines(t *testing.T, tg target, w *worker, path string, n int) {
	t.Helper()
	got := 0
	testtools.EventuallyEvery(60*time.Second, 300*time.Millisecond, func() bool {
		got = len(sinkValues(t, path))
		return got >= n || w.exited()
	})
	if got < n {
		_, seq := w.get("/connectors/seq/status")
		_, file := w.get("/connectors/file/status")
		w.fail()
		t.Fatalf("%s: the sink's file has %d lines, want %d (worker exited %v)\nseq status: %s\nfile status: %s\n%s", tg.name, got, n, w.exited(), seq, file, w.describe())
	}
}

var sinkLine = regexp.MustCompile(`^[^\t]+/0/(\d+)\tkey-(\d+)\tvalue-(\d+)$`)

// sinkValues returns the sequence numbers of the records in the sink's
// file, in order; a line it cannot parse is -1.
func sinkValues(t testing.TB, path string) []int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		m := sinkLine.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] || m[2] != m[3] {
			out = append(out, -1)
			continue
		}
		n, _ := strconv.Atoi(m[3])
		out = append(out, n)
	}
	return out
}

// topicValues returns the sequence numbers of the records of the topic's
// partition 0 (key-i/value-i at offset i), in order.
func topicValues(t testing.TB, tg target, topic string) []int {
	t.Helper()
	var out []int
	for _, r := range readAll(t, tg, topic) {
		k, v := strings.TrimPrefix(string(r.Key), "key-"), strings.TrimPrefix(string(r.Value), "value-")
		n, err := strconv.Atoi(v)
		if err != nil || k != v || int64(n) != r.Offset {
			out = append(out, -1)
			continue
		}
		out = append(out, n)
	}
	return out
}

// checkSeq checks that got is 0, 1, ..., n-1.
func checkSeq(t testing.TB, tg target, what string, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Errorf("%s: %s has %d records, want %d", tg.name, what, len(got), n)
	}
	bad := 0
	for i, v := range got {
		if v != i {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s: record %d is %d, want %d", tg.name, what, i, v, i)
			}
		}
	}
}

// checkConnectTopics checks that the worker's internal topics are compacted
// and that the config topic has one partition, as Connect requires.
func checkConnectTopics(t *testing.T, tg target, app string) {
	t.Helper()
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	want := map[string]int{app + "-configs": 1, app + "-offsets": 2, app + "-status": 1}
	for topic, parts := range want {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatalf("%s: metadata of %s: %v", tg.name, topic, err)
		}
		if td := md.Topics[topic]; td.Err != nil || len(td.Partitions) != parts {
			t.Errorf("%s: Connect topic %s: %v, %d partitions, want %d", tg.name, topic, td.Err, len(td.Partitions), parts)
		}
		cs := topicConfigs(t, tg, topic)
		t.Logf("%s: %s configs set: %s", tg.name, topic, showConfigs(cs))
		if c := cs["cleanup.policy"]; c.MaybeValue() != "compact" {
			t.Errorf("%s: Connect topic %s: cleanup.policy %q, want compact", tg.name, topic, c.MaybeValue())
		}
	}
}

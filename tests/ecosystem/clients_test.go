package ecosystem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// codecs are the compression codecs every client produces with, in the
// order of the partitions they go to; the index is Kafka's codec id in a
// record batch's attributes.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// extClient is a non-Java client driven through one of our scripts
// (tests/python, tests/node), which all take the same command line.
type extClient struct {
	name string   // as in test names and docs/COMPATIBILITY.md
	cmd  []string // interpreter and script
	// groupCodec is the compression.type of the group test's topic, so the
	// client's consumer decompresses what the target serves: Kafka
	// recompresses into it, kiggy builds batches of it where it serves
	// compressed Fetch.
	groupCodec string
}

func (c extClient) run(t *testing.T, tg target, timeout time.Duration, env []string, args ...string) (map[string]json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(slices.Clone(c.cmd[1:]), tg.addr), args...)
	cmd := exec.CommandContext(ctx, c.cmd[0], argv...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s on %s: %s: %v after %v", c.name, tg.name, strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v", timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v\n--- stdout:\n%s\n--- stderr:\n%s", c.name, strings.Join(args, " "), err, stdout.String(), lastBytes(stderr.String(), 6000))
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(lastLine(stdout.Bytes())), &res); err != nil {
		return nil, fmt.Errorf("%s %s: output is not a JSON object (%v):\n%s\n--- stderr:\n%s", c.name, strings.Join(args, " "), err, stdout.String(), lastBytes(stderr.String(), 6000))
	}
	return res, nil
}

func (c extClient) mustRun(t *testing.T, tg target, timeout time.Duration, args ...string) map[string]json.RawMessage {
	t.Helper()
	res, err := c.run(t, tg, timeout, nil, args...)
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	return res
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func field[T any](t *testing.T, res map[string]json.RawMessage, key string) T {
	t.Helper()
	var v T
	raw, ok := res[key]
	if !ok {
		t.Fatalf("no %q in the client's output %v", key, res)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%q in the client's output: %v", key, err)
	}
	return v
}

// pythonWith returns a python3 (its real executable, not a pyenv shim)
// that imports every module of mods, or skips (fails under
// KIGGY_REQUIRE_TOOLS=1).
func pythonWith(t testing.TB, mods ...string) string {
	t.Helper()
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			pythonOnce.err = errors.New("python3 not on PATH")
			return
		}
		out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			pythonOnce.err = fmt.Errorf("%s: %v", p, err)
			return
		}
		pythonOnce.path = strings.TrimSpace(string(out))
	})
	if pythonOnce.err == nil {
		out, err := exec.Command(pythonOnce.path, "-c", "import "+strings.Join(mods, ", ")).CombinedOutput()
		if err != nil {
			testtools.Require(t, "python3 with "+strings.Join(mods, ", "), false, fmt.Sprintf("%v: %s; %s", err, strings.TrimSpace(string(out)), testtools.Install))
		}
	}
	testtools.Require(t, "python3", pythonOnce.err == nil, fmt.Sprint(pythonOnce.err, "; ", testtools.Install))
	return pythonOnce.path
}

var pythonOnce struct {
	sync.Once
	path string
	err  error
}

// nodeWith returns node and checks that tests/node/node_modules has every
// package of pkgs, or skips (fails under KIGGY_REQUIRE_TOOLS=1).
func nodeWith(t testing.TB, pkgs ...string) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	testtools.Require(t, "node", err == nil, testtools.Install)
	dir = filepath.Join(testtools.Root(t), "tests", "node")
	for _, p := range pkgs {
		_, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json"))
		testtools.Require(t, "npm package "+p+" in tests/node/node_modules", err == nil, testtools.Install)
	}
	return node, dir
}

func scriptPath(t testing.TB, rel string) string {
	return filepath.Join(testtools.Root(t), filepath.FromSlash(rel))
}

// TestConfluentKafkaPython: confluent-kafka-python 2.16 (librdkafka 2.16).
func TestConfluentKafkaPython(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "confluent_kafka")
	c := extClient{name: "confluent-kafka-python", groupCodec: "zstd", cmd: []string{py, scriptPath(t, "tests/python/confluent_client.py")}}
	testExtClient(t, c, func(t *testing.T, tg target) {
		t.Run("group-protocol-consumer", func(t *testing.T) { testConsumerProtocol(t, c, tg) })
		for _, assignor := range []string{"", "range"} {
			name := "group-protocol-consumer-members"
			if assignor != "" {
				name += "-" + assignor
			}
			t.Run(name, func(t *testing.T) { testConsumerProtocolMembers(t, c, tg, assignor) })
		}
	})
}

// testConsumerProtocol consumes in a group with group.protocol=consumer
// (KIP-848, ConsumerGroupHeartbeat): one member reads all 12 records of a
// 2-partition topic, commits and closes.
func testConsumerProtocol(t *testing.T, c extClient, tg target) {
	const n = 12
	topic, group := uniqueName(t, "kip848"), uniqueName(t, "g")
	createTopic(t, tg, topic, 2, nil)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: fmt.Appendf(nil, "k-%d", i), Value: []byte("v")})
	}
	produceManual(t, tg, recs)
	res := c.mustRun(t, tg, time.Minute, "consume", topic, group, strconv.Itoa(n), "consumer")
	if got := field[[]string](t, res, "records"); len(got) != n {
		t.Errorf("%s: group.protocol=consumer: got %d records, want %d", tg.name, len(got), n)
	}
}

// groupMember is a running "member" command of a client script: a group
// member on the consumer protocol, whose event lines (assign, revoke and
// lost with partitions, one line per committed record) it reads.
type groupMember struct {
	name string
	p    *proc
}

// memberEvent is one line a member prints.
type memberEvent struct {
	Event      string  `json:"event"`
	Partitions []int32 `json:"partitions"`
	Record     string  `json:"record"`
}

// state returns the partitions m holds now (its assign events minus its
// revoke and lost events, in order) and the records it committed.
func (m *groupMember) state(t *testing.T) (owned map[int32]bool, records []string) {
	t.Helper()
	owned = map[int32]bool{}
	for _, line := range m.p.output() {
		var e memberEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("member %s printed %q: %v\n%s", m.name, line, err, m.p.describe())
		}
		switch e.Event {
		case "assign":
			for _, p := range e.Partitions {
				owned[p] = true
			}
		case "revoke", "lost":
			for _, p := range e.Partitions {
				delete(owned, p)
			}
		case "record":
			records = append(records, e.Record)
		}
	}
	return owned, records
}

// stop tells m to close (it leaves the group) and waits for it to exit.
func (m *groupMember) stop(t *testing.T) {
	t.Helper()
	m.p.closeStdin()
	if err := m.p.wait(time.Minute); err != nil {
		t.Fatalf("member %s: %v\n%s", m.name, err, m.p.describe())
	}
}

// testConsumerProtocolMembers runs several client processes as members of
// one group with group.protocol=consumer over a 6-partition topic, each
// committing every record before its next poll: members A and B share the
// partitions and read the first 60 records; C joins and takes 2 partitions
// from them (all three hold 2), and the next 60 are read; B leaves and A and
// C take its partitions (3 each), and the last 60 are read. Every record
// must be read exactly once by the group, and the committed offsets must be
// the partitions' ends. With the range assignor each member's partitions
// must be contiguous. The coordinator assigns with assignor
// (group.remote.assignor), or its default (uniform) when assignor is empty:
// librdkafka then asks for none.
func testConsumerProtocolMembers(t *testing.T, c extClient, tg target, assignor string) {
	const partitions, perPhase = 6, 60
	topic, group := uniqueName(t, "kip848m"), uniqueName(t, "g")
	createTopic(t, tg, topic, partitions, nil)
	sent := 0
	produce := func() {
		t.Helper()
		var recs []*kgo.Record
		for i := sent; i < sent+perPhase; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Key: fmt.Appendf(nil, "k-%d", i), Value: []byte("v")})
		}
		produceManual(t, tg, recs)
		sent += perPhase
	}
	members := map[string]*groupMember{}
	start := func(name string) {
		argv := append(slices.Clone(c.cmd[1:]), tg.addr, "member", topic, group, assignor)
		members[name] = &groupMember{name: name, p: startProc(t, nil, c.cmd[0], argv...)}
	}
	describe := func() string {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(members)) {
			fmt.Fprintf(&b, "--- member %s:\n%s\n", name, members[name].p.describe())
		}
		return b.String()
	}
	// settled waits until the live members hold disjoint sets of want[i]
	// partitions covering the topic, and have committed every record sent.
	settled := func(step string, want map[string]int) {
		t.Helper()
		var last string
		ok := testtools.Eventually(2*time.Minute, func() bool {
			all := map[int32]bool{}
			read := 0
			var parts []string
			for name, m := range members {
				owned, records := m.state(t)
				read += len(records)
				if n, live := want[name]; live {
					parts = append(parts, fmt.Sprintf("%s %v", name, slices.Sorted(maps.Keys(owned))))
					if len(owned) != n {
						last = fmt.Sprintf("%s; read %d of %d", strings.Join(parts, ", "), read, sent)
						return false
					}
					if ps := slices.Sorted(maps.Keys(owned)); assignor == "range" && ps[n-1]-ps[0] != int32(n-1) {
						last = fmt.Sprintf("%s holds %v, not a range", name, ps)
						return false
					}
					for p := range owned {
						if all[p] {
							return false
						}
						all[p] = true
					}
				}
			}
			slices.Sort(parts)
			last = fmt.Sprintf("%s; read %d of %d", strings.Join(parts, ", "), read, sent)
			return len(all) == partitions && read >= sent
		})
		if !ok {
			t.Fatalf("%s: %s: %s: not settled after 2 minutes: %s\n%s", tg.name, c.name, step, last, describe())
		}
		t.Logf("%s: %s: %s: %s", tg.name, c.name, step, last)
	}

	produce()
	start("A")
	start("B")
	settled("A and B", map[string]int{"A": 3, "B": 3})
	start("C")
	settled("C joined", map[string]int{"A": 2, "B": 2, "C": 2})
	produce()
	settled("C joined, more records", map[string]int{"A": 2, "B": 2, "C": 2})
	members["B"].stop(t)
	settled("B left", map[string]int{"A": 3, "C": 3})
	produce()
	settled("B left, more records", map[string]int{"A": 3, "C": 3})
	for _, name := range []string{"A", "C"} {
		members[name].stop(t)
	}

	seen := map[string][]string{}
	for name, m := range members {
		_, records := m.state(t)
		for _, r := range records {
			seen[r] = append(seen[r], name)
		}
	}
	for i := range sent {
		p, o := i%partitions, i/partitions
		want := fmt.Sprintf("%d/%d/k-%d", p, o, i)
		if by := seen[want]; len(by) != 1 {
			t.Errorf("%s: %s: record %s read by %v, want exactly one member", tg.name, c.name, want, by)
		}
		delete(seen, want)
	}
	for r, by := range seen {
		t.Errorf("%s: %s: %s read by %v was never sent", tg.name, c.name, r, by)
	}
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		if o, ok := offs.Lookup(topic, p); !ok || o.At != int64(sent/partitions) {
			t.Errorf("%s: %s: group %s committed %v (found %v) for partition %d, want %d", tg.name, c.name, group, o.At, ok, p, sent/partitions)
		}
	}
}

// TestAiokafka: aiokafka 0.14 with cramjam for snappy, lz4 and zstd.
func TestAiokafka(t *testing.T) {
	t.Parallel()
	py := pythonWith(t, "aiokafka", "cramjam")
	testExtClient(t, extClient{name: "aiokafka", groupCodec: "snappy", cmd: []string{py, scriptPath(t, "tests/python/aiokafka_client.py")}})
}

// TestKafkaJS: kafkajs 2.2 with kafkajs-snappy, kafkajs-lz4 and a zstd codec
// over zstd-napi.
func TestKafkaJS(t *testing.T) {
	t.Parallel()
	node, dir := nodeWith(t, "kafkajs", "kafkajs-snappy", "kafkajs-lz4", "zstd-napi")
	testExtClient(t, extClient{name: "kafkajs", groupCodec: "lz4", cmd: []string{node, filepath.Join(dir, "kafkajs_client.js")}})
}

// testExtClient runs a client's admin, produce and group scenarios against
// each target.
func testExtClient(t *testing.T, c extClient, more ...func(t *testing.T, tg target)) {
	forEachTarget(t, func(t *testing.T, tg target) {
		start := time.Now()
		v := c.mustRun(t, tg, time.Minute, "version")
		var parts []string
		for k, raw := range v {
			parts = append(parts, k+"="+string(raw))
		}
		slices.Sort(parts)
		t.Logf("%s: %s", c.name, strings.Join(parts, " "))
		t.Run("admin", func(t *testing.T) { testAdmin(t, c, tg) })
		t.Run("produce-codecs", func(t *testing.T) { testProduceCodecs(t, c, tg) })
		t.Run("group-resume", func(t *testing.T) { testGroupResume(t, c, tg) })
		for _, f := range more {
			f(t, tg)
		}
		t.Logf("%s on %s: %v in all", c.name, tg.name, time.Since(start).Round(time.Millisecond))
	})
}

// testAdmin: the client creates two topics (one with a config), describes
// the first's partitions and config, and deletes the second; franz-go
// checks the result.
func testAdmin(t *testing.T, c extClient, tg target) {
	keep, drop := uniqueName(t, "keep"), uniqueName(t, "drop")
	res := c.mustRun(t, tg, 90*time.Second, "admin", keep, drop)
	if n := field[int](t, res, "partitions"); n != 3 {
		t.Errorf("%s: %s described %s with %d partitions, want 3", tg.name, c.name, keep, n)
	}
	if v := field[*string](t, res, "retention.ms"); v == nil || *v != "3600000" {
		t.Errorf("%s: %s described retention.ms of %s as %v, want 3600000", tg.name, c.name, keep, v)
	}
	if !field[bool](t, res, "deleted") {
		t.Errorf("%s: %s: %s still listed after its deletion", tg.name, c.name, drop)
	}
	if !field[bool](t, res, "listed") {
		t.Errorf("%s: %s: %s not listed", tg.name, c.name, keep)
	}
	// franz-go's view.
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	td, err := adm.ListTopics(ctx, keep, drop)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := td[keep]; !ok || d.Err != nil || len(d.Partitions) != 3 {
		t.Errorf("%s: franz-go sees %s: %v %v, %d partitions; want 3", tg.name, keep, ok, d.Err, len(d.Partitions))
	}
	if d, ok := td[drop]; ok && d.Err == nil {
		t.Errorf("%s: franz-go still sees the deleted %s", tg.name, drop)
	}
	if c := topicConfigs(t, tg, keep)["retention.ms"]; c.MaybeValue() != "3600000" {
		t.Errorf("%s: franz-go sees retention.ms %q on %s, want 3600000", tg.name, c.MaybeValue(), keep)
	}
}

// testProduceCodecs: the client produces n records with each codec, codec
// i to partition i; franz-go reads every partition back and compares keys,
// values, headers and offsets; on Kafka (which keeps batches as they were
// sent) the raw batches must carry the codec too, proving the client really
// compressed.
func testProduceCodecs(t *testing.T, c extClient, tg target) {
	const n = 30
	topic := uniqueName(t, "codecs")
	createTopic(t, tg, topic, int32(len(codecs)), nil)
	c.mustRun(t, tg, 90*time.Second, "produce", topic, strconv.Itoa(n))
	got := map[int32][]*kgo.Record{}
	for _, r := range readAll(t, tg, topic) {
		got[r.Partition] = append(got[r.Partition], r)
	}
	for p, codec := range codecs {
		recs := got[int32(p)]
		if len(recs) != n {
			t.Errorf("%s: %s: partition %d (%s) has %d records, want %d", tg.name, c.name, p, codec, len(recs), n)
		}
		for i, r := range recs {
			wantKey := fmt.Sprintf("%s-key-%d", codec, i)
			wantVal := strings.Repeat(fmt.Sprintf("%s value %d ", codec, i), 12)
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			if r.Offset != int64(i) || string(r.Key) != wantKey || string(r.Value) != wantVal ||
				len(r.Headers) != 2 || hs["codec"] != codec || hs["i"] != strconv.Itoa(i) {
				t.Errorf("%s: %s: %s record %d: offset %d key %q value %q headers %v; want key %q", tg.name, c.name, codec, i, r.Offset, r.Key, r.Value, hs, wantKey)
				break
			}
		}
		if tg.name == "kafka" {
			if ids := batchCodecs(t, tg, topic, int32(p)); len(ids) != 1 || ids[0] != int8(p) {
				t.Errorf("kafka: %s: the %s batches carry codecs %v, want only %d: the client did not compress as asked", c.name, codec, ids, p)
			}
		}
	}
}

// batchCodecs fetches a partition raw (no decompression) and returns the
// distinct compression codecs of its record batches.
func batchCodecs(t *testing.T, tg target, topic string, p int32) []int8 {
	t.Helper()
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	cl, adm := admin(t, tg)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 8 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic                 // up to Fetch v12
	rt.TopicID = md.Topics[topic].ID // v13 on
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.PartitionMaxBytes = 8 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("raw fetch of %s/%d: %v", topic, p, err)
	}
	var ids []int8
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("raw fetch of %s/%d: %v", topic, p, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("raw fetch of %s/%d: %v", topic, p, err)
			}
			b := rp.RecordBatches
			for len(b) >= 61 {
				var batch kmsg.RecordBatch
				if err := batch.ReadFrom(b); err != nil {
					t.Fatalf("raw fetch of %s/%d: %v", topic, p, err)
				}
				size := 12 + int(batch.Length)
				if id := int8(batch.Attributes & 7); !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
				if size > len(b) {
					break
				}
				b = b[size:]
			}
		}
	}
	return ids
}

// testGroupResume: franz-go produces 60 records over 3 partitions of a
// topic with compression.type c.groupCodec; the client consumes 25 of them
// in a group, commits exactly those and closes; a second run of the client
// in the same group must get the other 35 —
// none of the first 25 again (it resumed from the committed offsets) and
// none missing — and the group's committed offsets must be the ends.
func testGroupResume(t *testing.T, c extClient, tg target) {
	const total, first = 60, 25
	topic, group := uniqueName(t, "grp"), uniqueName(t, "g")
	createTopic(t, tg, topic, 3, map[string]*string{"compression.type": &c.groupCodec})
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "v-%d", i)})
	}
	produceManual(t, tg, recs)

	seen := map[string]int{}
	for run, n := range []int{first, total - first} {
		res := c.mustRun(t, tg, 90*time.Second, "consume", topic, group, strconv.Itoa(n))
		got := field[[]string](t, res, "records")
		if len(got) != n {
			t.Errorf("%s: %s: consume run %d got %d records, want %d", tg.name, c.name, run+1, len(got), n)
		}
		for _, g := range got {
			if seen[g]++; seen[g] == 2 {
				t.Errorf("%s: %s: %s delivered again in run %d: not resumed from the committed offset", tg.name, c.name, g, run+1)
			}
		}
	}
	// Record i is partition i%3, offset i/3, key k-i.
	for i := range total {
		if want := fmt.Sprintf("%d/%d/k-%d", i%3, i/3, i); seen[want] == 0 {
			t.Errorf("%s: %s: %s never delivered", tg.name, c.name, want)
		}
	}
	if len(seen) != total {
		t.Errorf("%s: %s: delivered %d distinct records, want %d", tg.name, c.name, len(seen), total)
	}
	ctx, cancel := contextTimeout(30 * time.Second)
	defer cancel()
	_, adm := admin(t, tg)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, ok := offs.Lookup(topic, p); !ok || o.At != total/3 {
			t.Errorf("%s: %s: group %s committed %v (found %v) for partition %d, want %d", tg.name, c.name, group, o.At, ok, p, total/3)
		}
	}
}

func produceManual(t testing.TB, tg target, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := contextTimeout(time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("%s: producing: %v", tg.name, err)
	}
}

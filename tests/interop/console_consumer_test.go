package interop

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// consoleConsumer is the Java 4.x console consumer (kafka-console-consumer).
const consoleConsumer = "org.apache.kafka.tools.consumer.ConsoleConsumer"

// consoleNull is the null.literal the console consumer prints for a null
// key, value or header value.
const consoleNull = "<null>"

// consoleFormat makes DefaultMessageFormatter print every field of a record:
// "CreateTime:TS\tPartition:P\tOffset:O\tHEADERS\tKEY\tVALUE", HEADERS being
// "NO_HEADERS" or "name:value,name:value".
var consoleFormat = []string{
	"--formatter-property", "print.timestamp=true",
	"--formatter-property", "print.partition=true",
	"--formatter-property", "print.offset=true",
	"--formatter-property", "print.headers=true",
	"--formatter-property", "print.key=true",
	"--formatter-property", "null.literal=" + consoleNull,
}

// consoleTotal matches the console consumer's last line on stderr.
var consoleTotal = regexp.MustCompile(`(?m)^Processed a total of (\d+) messages$`)

// consoleBytes reads a key, value or header value printed by the console
// consumer.
func consoleBytes(s string) []byte {
	if s == consoleNull {
		return nil
	}
	return []byte(s)
}

// parseConsoleLine parses one line printed with consoleFormat. Keys and
// header values must not hold a tab, header names and values no ',' or ':'
// (franzRecords' do not); the value, last, may hold anything but a newline.
func parseConsoleLine(line string) (partition int32, rec kiggytest.Record, err error) {
	f := strings.SplitN(line, "\t", 6)
	if len(f) != 6 {
		return 0, rec, fmt.Errorf("%d tab-separated fields, want 6", len(f))
	}
	ts, ok1 := strings.CutPrefix(f[0], "CreateTime:")
	p, ok2 := strings.CutPrefix(f[1], "Partition:")
	o, ok3 := strings.CutPrefix(f[2], "Offset:")
	if !ok1 || !ok2 || !ok3 {
		return 0, rec, fmt.Errorf("want CreateTime:, Partition:, Offset: prefixes")
	}
	var errs [3]error
	rec.Timestamp, errs[0] = strconv.ParseInt(ts, 10, 64)
	p32, err1 := strconv.ParseInt(p, 10, 32)
	errs[1] = err1
	rec.Offset, errs[2] = strconv.ParseInt(o, 10, 64)
	for _, err := range errs {
		if err != nil {
			return 0, rec, err
		}
	}
	if f[3] != "NO_HEADERS" {
		for h := range strings.SplitSeq(f[3], ",") {
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				return 0, rec, fmt.Errorf("header %q has no ':'", h)
			}
			rec.Headers = append(rec.Headers, kiggytest.Header{Key: name, Value: consoleBytes(value)})
		}
	}
	rec.Key, rec.Value = consoleBytes(f[4]), consoleBytes(f[5])
	return int32(p32), rec, nil
}

// consoleConsume runs the console consumer in group on topic and returns
// the records it printed by partition (in the order printed). It fails t
// unless the consumer exits 0 and reports the number of lines it printed.
func consoleConsume(t testing.TB, tg target, topic, group string, extra ...string) map[int32][]kiggytest.Record {
	t.Helper()
	args := append([]string{"--bootstrap-server", tg.Addr(), "--topic", topic, "--group", group, "--from-beginning",
		"--command-property", "request.timeout.ms=30000"}, consoleFormat...)
	args = append(args, extra...)
	r := runJava(t, 3*time.Minute, nil, "", consoleConsumer, args...)
	if r.code != 0 {
		t.Fatalf("%s %s failed:\n%s", consoleConsumer, strings.Join(args, " "), r)
	}
	got := map[int32][]kiggytest.Record{}
	n := 0
	for line := range strings.Lines(r.stdout) {
		line = strings.TrimSuffix(line, "\n")
		p, rec, err := parseConsoleLine(line)
		if err != nil {
			t.Fatalf("console consumer line %q: %v\n%s", line, err, r)
		}
		got[p] = append(got[p], rec)
		n++
	}
	m := consoleTotal.FindStringSubmatch(r.stderr)
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Fatalf("console consumer printed %d records; want \"Processed a total of %d messages\" on stderr:\n%s", n, n, r)
	}
	return got
}

// consoleGroupRounds runs the console consumer three times in one new group
// on topic, whose partitions hold bp (franzRecords): the first run reads
// everything from the beginning, the second reads nothing (it waits 10 s for
// a record), and after franz-go produces more, the third reads exactly the
// new records. After the first and third, the group's committed offsets are
// the partitions' ends. Records sent without a timestamp must carry one
// within win.
func consoleGroupRounds(t *testing.T, tg target, topic string, partitions int32, bp byPartition, win *tsWindow) {
	t.Helper()
	group := "console-" + topic
	total := 0
	for _, recs := range bp {
		total += len(recs)
	}
	got := consoleConsume(t, tg, topic, group, "--max-messages", strconv.Itoa(total), "--timeout-ms", "60000")
	for p := range partitions {
		compare(t, tg, fmt.Sprintf("console consumer run 1 %s/%d", topic, p), got[p], bp[p], win)
	}
	checkCommitted(t, tg, group, topic, partitions, bp)
	checkConsumerGroupsTool(t, tg, group, topic, partitions, bp)

	if got := consoleConsume(t, tg, topic, group, "--timeout-ms", "10000"); len(got) != 0 {
		t.Errorf("console consumer run 2 of group %s read records again: %s", group, countByPartition(got))
	}

	before := map[int32]int{}
	for p, recs := range bp {
		before[p] = len(recs)
	}
	const more = 90
	rs := franzRecords(more, "more", time.Now().Truncate(time.Millisecond))
	for _, r := range rs {
		r.Topic = topic
	}
	produceFranzTo(t, tg.Addr(), bp, rs)
	got = consoleConsume(t, tg, topic, group, "--max-messages", strconv.Itoa(more), "--timeout-ms", "60000")
	for p := range partitions {
		first := before[p]
		compareFrom(t, tg, fmt.Sprintf("console consumer run 3 %s/%d", topic, p), int64(first), got[p], bp[p][first:], nil)
	}
	checkCommitted(t, tg, group, topic, partitions, bp)
}

// consumerGroupCommand is kafka-consumer-groups (Java 4.x Admin client:
// ListGroups, DescribeGroups, OffsetFetch, ListOffsets).
const consumerGroupCommand = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"

// checkConsumerGroupsTool checks what kafka-consumer-groups says of a group
// with no members left that consumed all of bp: --list names it, and
// --describe prints one row per partition whose current offset and log end
// offset are the partition's end, with lag 0.
func checkConsumerGroupsTool(t testing.TB, tg target, group, topic string, partitions int32, bp byPartition) {
	t.Helper()
	r := adminTool(t, tg, consumerGroupCommand, "--list")
	if r.code != 0 || !slices.Contains(strings.Fields(r.stdout), group) {
		t.Errorf("kafka-consumer-groups --list: want exit 0 and group %s:\n%s", group, r)
	}
	r = adminTool(t, tg, consumerGroupCommand, "--describe", "--group", group)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "Consumer group '"+group+"' has no active members.") {
		t.Errorf("kafka-consumer-groups --describe: want exit 0 and \"Consumer group '%s' has no active members.\":\n%s", group, r)
	}
	rows := map[int32]string{}
	for line := range strings.Lines(r.stdout) {
		f := strings.Fields(line)
		if len(f) == 9 && f[0] == group && f[1] == topic {
			p, err := strconv.ParseInt(f[2], 10, 32)
			if err != nil {
				t.Errorf("kafka-consumer-groups --describe: bad partition in %q", line)
				continue
			}
			rows[int32(p)] = strings.Join(f[3:6], " ")
		}
	}
	for p := range partitions {
		end := len(bp[p])
		if want := fmt.Sprintf("%d %d 0", end, end); rows[p] != want {
			t.Errorf("kafka-consumer-groups --describe %s/%d: CURRENT-OFFSET LOG-END-OFFSET LAG = %q, want %q\n%s", topic, p, rows[p], want, r)
		}
	}
	if len(rows) != int(partitions) {
		t.Errorf("kafka-consumer-groups --describe printed %d rows for %s, want %d:\n%s", len(rows), topic, partitions, r)
	}
}

// checkConsumerGroupsDelete deletes group, which has no members left, with
// kafka-consumer-groups --delete (DeleteGroups): the tool reports success,
// --list no longer names the group, its committed offsets are gone, and a
// second --delete fails with GroupIdNotFoundException.
func checkConsumerGroupsDelete(t testing.TB, tg target, group, topic string, partitions int32) {
	t.Helper()
	r := adminTool(t, tg, consumerGroupCommand, "--delete", "--group", group)
	if want := "Deletion of requested consumer groups ('" + group + "') was successful."; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("kafka-consumer-groups --delete: want exit 0 and %q:\n%s", want, r)
	}
	r = adminTool(t, tg, consumerGroupCommand, "--list")
	if r.code != 0 || slices.Contains(strings.Fields(r.stdout), group) {
		t.Errorf("kafka-consumer-groups --list after --delete: want exit 0 without group %s:\n%s", group, r)
	}
	checkCommitted(t, tg, group, topic, partitions, byPartition{})
	r = adminTool(t, tg, consumerGroupCommand, "--delete", "--group", group)
	if want := "GroupIdNotFoundException"; !strings.Contains(r.stdout+r.stderr, want) {
		t.Errorf("kafka-consumer-groups --delete of a deleted group: want %s:\n%s", want, r)
	}
}

// TestConsoleConsumer consumes with org.apache.kafka.tools.consumer.ConsoleConsumer
// (Java 4.x, classic group protocol, auto-commit) in a group, from the
// beginning of a 3-partition topic that franz-go filled: see
// consoleGroupRounds.
func TestConsoleConsumer(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	const partitions = 3
	topic := topicName(t)
	tg.CreateTopic(t, topic, partitions)
	rs := franzRecords(300, "first", time.Now().Truncate(time.Millisecond))
	for _, r := range rs {
		r.Topic = topic
	}
	bp := byPartition{}
	produceFranzTo(t, tg.Addr(), bp, rs)
	consoleGroupRounds(t, tg, topic, partitions, bp, nil)
	checkConsumerGroupsDelete(t, tg, "console-"+topic, topic, partitions)
}

// TestConsoleConsumerKIP848 runs the console consumer with
// group.protocol=consumer (KIP-848: ConsumerGroupHeartbeat, server-side
// assignment) in a new group over a 2-partition topic that franz-go filled
// with 40 records: on both targets it reads all 40, compared record by record
// per partition, and exits 0 reporting 40.
func TestConsoleConsumerKIP848(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	const partitions = 2
	topic := topicName(t)
	tg.CreateTopic(t, topic, partitions)
	rs := franzRecords(40, "kip848", time.Now().Truncate(time.Millisecond))
	for _, r := range rs {
		r.Topic = topic
	}
	bp := produceFranz(t, tg.Addr(), rs)
	got := consoleConsume(t, tg, topic, "kip848-"+topic, "--max-messages", "40", "--timeout-ms", "60000",
		"--command-property", "group.protocol=consumer")
	for p := range int32(partitions) {
		compare(t, tg, fmt.Sprintf("KIP-848 console consumer %s/%d", topic, p), got[p], bp[p], nil)
	}
}

// TestParseConsoleLine pins the console consumer's output format the test
// relies on, as DefaultMessageFormatter prints it with consoleFormat.
func TestParseConsoleLine(t *testing.T) {
	p, rec, err := parseConsoleLine("CreateTime:1700000000123\tPartition:2\tOffset:17\tzeta:1,nullh:<null>,emptyh:\t<null>\tv, with\ttab")
	want := kiggytest.Record{Offset: 17, Timestamp: 1700000000123, Value: []byte("v, with\ttab"), Headers: []kiggytest.Header{
		{Key: "zeta", Value: []byte("1")}, {Key: "nullh"}, {Key: "emptyh", Value: []byte{}}}}
	if err != nil || p != 2 || rec.Offset != want.Offset || rec.Timestamp != want.Timestamp ||
		!sameBytes(rec.Key, want.Key) || !sameBytes(rec.Value, want.Value) || !sameHeaders(rec.Headers, want.Headers) {
		t.Fatalf("parsed partition %d, %+v, %v; want 2, %+v", p, rec, err, want)
	}
	_, rec, err = parseConsoleLine("CreateTime:1\tPartition:0\tOffset:0\tNO_HEADERS\t\t")
	if err != nil || rec.Headers != nil || !sameBytes(rec.Key, []byte{}) || !sameBytes(rec.Value, []byte{}) {
		t.Fatalf("empty key and value: parsed %+v, %v", rec, err)
	}
	for _, bad := range []string{"", "value only", "CreateTime:x\tPartition:0\tOffset:0\tNO_HEADERS\tk\tv", "LogAppendTime:1\tPartition:0\tOffset:0\tNO_HEADERS\tk\tv", "CreateTime:1\tPartition:0\tOffset:0\tnocolon\tk\tv"} {
		if _, _, err := parseConsoleLine(bad); err == nil {
			t.Errorf("parseConsoleLine(%q) accepted it", bad)
		}
	}
}

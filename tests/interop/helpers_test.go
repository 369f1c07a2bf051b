package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// topicName returns a topic name unique to this run, derived from the test
// name (the Kafka target is shared by every test).
func topicName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := regexp.MustCompile(`[^a-zA-Z0-9._-]+`).ReplaceAllString(t.Name(), ".")
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-" + hex.EncodeToString(b[:])
}

// tsWindow is the range of timestamps (ms, inclusive) a client that stamps
// records itself may have used.
type tsWindow struct{ from, to int64 }

// window runs produce and returns the wall-clock window around it.
func window(produce func()) tsWindow {
	from := time.Now().UnixMilli()
	produce()
	return tsWindow{from: from, to: time.Now().UnixMilli()}
}

// check reads back one partition and compares it with want, the records sent
// to it in order: key, value, headers (in the order the target keeps), and
// timestamp (exact, or within win when win is non-nil and the record was sent
// without one: Timestamp 0); offsets must run 0, 1, 2, ... A mismatch reports
// the first few differing records.
func check(t testing.TB, tg target, topic string, partition int32, want []kiggytest.Record, win *tsWindow) {
	t.Helper()
	got := tg.ReadBack(t, topic, partition)
	compare(t, tg, fmt.Sprintf("%s/%d", topic, partition), got, want, win)
}

// compare checks got against want as check does.
func compare(t testing.TB, tg target, where string, got, want []kiggytest.Record, win *tsWindow) {
	t.Helper()
	compareFrom(t, tg, where, 0, got, want, win)
}

// compareFrom is compare for records that start at offset first.
func compareFrom(t testing.TB, tg target, where string, first int64, got, want []kiggytest.Record, win *tsWindow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s on %s: read back %d records, sent %d", where, tg.Name(), len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		var diffs []string
		if wo := first + int64(i); g.Offset != wo {
			diffs = append(diffs, fmt.Sprintf("offset %d, want %d", g.Offset, wo))
		}
		if !sameBytes(g.Key, w.Key) {
			diffs = append(diffs, fmt.Sprintf("key %s, want %s", show(g.Key), show(w.Key)))
		}
		if !sameBytes(g.Value, w.Value) {
			diffs = append(diffs, fmt.Sprintf("value %s, want %s", show(g.Value), show(w.Value)))
		}
		if wh := tg.ExpectHeaders(w.Key, w.Headers); !sameHeaders(g.Headers, wh) {
			diffs = append(diffs, fmt.Sprintf("headers %s, want %s", showHeaders(g.Headers), showHeaders(wh)))
		}
		if win != nil && w.Timestamp == 0 {
			if g.Timestamp < win.from || g.Timestamp > win.to {
				diffs = append(diffs, fmt.Sprintf("timestamp %d, want within [%d, %d]", g.Timestamp, win.from, win.to))
			}
		} else if g.Timestamp != w.Timestamp {
			diffs = append(diffs, fmt.Sprintf("timestamp %d, want %d", g.Timestamp, w.Timestamp))
		}
		if len(diffs) > 0 {
			bad++
			if bad <= 5 {
				t.Errorf("%s on %s: record %d: %s", where, tg.Name(), first+int64(i), strings.Join(diffs, "; "))
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s on %s: %d records differ in all", where, tg.Name(), bad)
	}
}

// sameBytes is bytes.Equal that also tells null (nil) from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func sameHeaders(a, b []kiggytest.Header) bool {
	return slices.EqualFunc(a, b, func(x, y kiggytest.Header) bool {
		return x.Key == y.Key && sameBytes(x.Value, y.Value)
	})
}

func sortedHeaders(hs []kiggytest.Header) []kiggytest.Header {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b kiggytest.Header) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// show prints bytes for a failure message: null, or a quoted prefix and the
// length and checksum of long values.
func show(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) <= 64:
		return fmt.Sprintf("%q", b)
	default:
		return fmt.Sprintf("%q...(%d bytes, crc %08x)", b[:32], len(b), crc32.ChecksumIEEE(b))
	}
}

func showHeaders(hs []kiggytest.Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%q=%s", h.Key, show(h.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// result is what a finished command left behind.
type result struct {
	stdout, stderr string
	code           int // exit code; -1 if killed
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.code, tail(r.stdout), tail(r.stderr))
}

// tail keeps the end of long tool output for failure messages.
func tail(s string) string {
	const max = 6000
	if len(s) > max {
		return "..." + s[len(s)-max:]
	}
	return s
}

// run runs a command with stdin, bounded by timeout (then killed), and
// returns its output and exit code. It fails t only if the command cannot be
// started or overruns.
func run(t testing.TB, timeout time.Duration, stdin []byte, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s did not finish within %v; killed.\n%s", name, timeout, r)
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running %s: %v", name, err)
	}
	t.Logf("%s: exit %d after %v", name, r.code, time.Since(start).Round(time.Millisecond))
	return r
}

// checkCommitted checks that group's committed offset of every partition of
// topic is the partition's end: everything in bp was consumed and committed.
// It asks the target with franz-go's admin client (OffsetFetch).
func checkCommitted(t testing.TB, tg target, group, topic string, partitions int32, bp byPartition) {
	t.Helper()
	offs, err := fetchOffsets(tg, group)
	if err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", group, err)
	}
	for p := range partitions {
		o, ok := offs.Lookup(topic, p)
		switch want := int64(len(bp[p])); {
		case !ok && want == 0:
		case !ok:
			t.Errorf("group %s has no committed offset for %s/%d, want %d", group, topic, p, want)
		case o.Err != nil:
			t.Errorf("group %s, %s/%d: committed offset error %v", group, topic, p, o.Err)
		case o.At != want:
			t.Errorf("group %s committed offset %d for %s/%d, want %d (the end)", group, o.At, topic, p, want)
		}
	}
}

// fetchOffsets asks tg for group's committed offsets with franz-go's admin
// client (OffsetFetch).
func fetchOffsets(tg target, group string) (kadm.OffsetResponses, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Addr()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kadm.NewClient(cl).FetchOffsets(ctx, group)
}

// deadlineOf is ctx's deadline, or a minute from now if it has none: how
// long a poll bounded by ctx may go on.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

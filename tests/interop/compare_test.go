package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// recorder collects what compare reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// fixedOrder is a target stub for compare: headers kept as sent, no I/O.
type fixedOrder struct{}

func (fixedOrder) Name() string                                          { return "stub" }
func (fixedOrder) Addr() string                                          { return "" }
func (fixedOrder) CreateTopic(testing.TB, string, int32)                 {}
func (fixedOrder) ReadBack(testing.TB, string, int32) []kiggytest.Record { return nil }
func (fixedOrder) ExpectHeaders(_ []byte, hs []kiggytest.Header) []kiggytest.Header {
	return hs
}

// TestCompareCatches proves the checker behind every interop test can fail:
// each single-field difference is reported.
func TestCompareCatches(t *testing.T) {
	base := func() kiggytest.Record {
		return kiggytest.Record{
			Offset: 0, Timestamp: 1000, Key: []byte("k"), Value: []byte("v"),
			Headers: []kiggytest.Header{{Key: "b", Value: []byte("1")}, {Key: "a", Value: []byte{}}},
		}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*kiggytest.Record)
		win     *tsWindow
		stamped bool // sent with a timestamp: compared exactly even with a window
		want    string
	}{
		{"same", func(*kiggytest.Record) {}, nil, true, ""},
		{"offset", func(r *kiggytest.Record) { r.Offset = 1 }, nil, true, "offset 1, want 0"},
		{"null key vs empty", func(r *kiggytest.Record) { r.Key = []byte{} }, nil, true, `key "", want "k"`},
		{"key", func(r *kiggytest.Record) { r.Key = nil }, nil, true, `key null, want "k"`},
		{"value", func(r *kiggytest.Record) { r.Value = []byte("w") }, nil, true, `value "w"`},
		{"header order", func(r *kiggytest.Record) { r.Headers[0], r.Headers[1] = r.Headers[1], r.Headers[0] }, nil, true, "headers"},
		{"null header vs empty", func(r *kiggytest.Record) { r.Headers[1].Value = nil }, nil, true, "headers"},
		{"header missing", func(r *kiggytest.Record) { r.Headers = r.Headers[:1] }, nil, true, "headers"},
		{"timestamp", func(r *kiggytest.Record) { r.Timestamp = 999 }, nil, true, "timestamp 999, want 1000"},
		{"timestamp window", func(r *kiggytest.Record) {}, &tsWindow{from: 1001, to: 2000}, false, "want within [1001, 2000]"},
		{"timestamp in window", func(r *kiggytest.Record) { r.Timestamp = 1500 }, &tsWindow{from: 1001, to: 2000}, false, ""},
		{"stamped in window", func(r *kiggytest.Record) { r.Timestamp = 1500 }, &tsWindow{from: 1001, to: 2000}, true, "timestamp 1500, want 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := base()
			tc.mutate(&got)
			want := base()
			if !tc.stamped {
				want.Timestamp = 0
			}
			rec := &recorder{TB: t}
			compare(rec, fixedOrder{}, "x/0", []kiggytest.Record{got}, []kiggytest.Record{want}, tc.win)
			switch {
			case tc.want == "" && len(rec.errs) != 0:
				t.Fatalf("reported %q for identical records", rec.errs)
			case tc.want != "" && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tc.want)):
				t.Fatalf("reported %q, want one error containing %q", rec.errs, tc.want)
			}
		})
	}

	rec := &recorder{TB: t}
	compareFrom(rec, fixedOrder{}, "x/0", 7, []kiggytest.Record{base()}, []kiggytest.Record{base()}, nil)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "record 7: offset 0, want 7") {
		t.Fatalf("compareFrom(first 7) reported %q for a record at offset 0", rec.errs)
	}

	if sameBytes(nil, []byte{}) || sameBytes([]byte{}, nil) || !sameBytes(nil, nil) || !sameBytes([]byte{}, []byte{}) {
		t.Fatal("sameBytes does not tell null from empty")
	}

	rec = &recorder{TB: t}
	compare(rec, fixedOrder{}, "x/0", nil, []kiggytest.Record{base()}, nil)
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "read back 0 records, sent 1") {
		t.Fatalf("missing record reported as %q", rec.errs)
	}
}

// TestKiggyHeaderOrder pins the mapping rule the kiggy target expects
// (docs/design/record-mapping.md §2.6, §3.5).
func TestKiggyHeaderOrder(t *testing.T) {
	hs := []kiggytest.Header{{Key: "z", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}
	sorted := []kiggytest.Header{hs[1], hs[0]}
	k := &kiggyTarget{}
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		name string
		key  []byte
		hs   []kiggytest.Header
		want []kiggytest.Header
	}{
		{"native", []byte("k"), hs, sorted},
		{"null key", nil, hs, sorted},
		{"255-byte key", []byte(long[:255]), hs, sorted},
		{"empty key", []byte{}, hs, hs},
		{"256-byte key", []byte(long), hs, hs},
		{"null header", nil, append(hs[:2:2], kiggytest.Header{Key: "m"}), append(hs[:2:2], kiggytest.Header{Key: "m"})},
		{"empty header", nil, append(hs[:2:2], kiggytest.Header{Key: "m", Value: []byte{}}), append(hs[:2:2], kiggytest.Header{Key: "m", Value: []byte{}})},
		{"256-byte header", nil, append(hs[:2:2], kiggytest.Header{Key: "m", Value: []byte(long)}), append(hs[:2:2], kiggytest.Header{Key: "m", Value: []byte(long)})},
		{"248-byte name", nil, append(hs[:2:2], kiggytest.Header{Key: long[:248], Value: []byte("v")}), append(hs[:2:2], kiggytest.Header{Key: long[:248], Value: []byte("v")})},
	} {
		if got := k.ExpectHeaders(tc.key, tc.hs); !sameHeaders(got, tc.want) {
			t.Errorf("%s: ExpectHeaders = %s, want %s", tc.name, showHeaders(got), showHeaders(tc.want))
		}
	}
}

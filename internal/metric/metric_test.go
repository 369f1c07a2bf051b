package metric

import (
	"strings"
	"testing"
	"time"
)

func TestHistogramExposition(t *testing.T) {
	var h Histogram
	var b strings.Builder
	h.Write(&b, "x_seconds", "api", "Produce")
	if b.Len() != 0 {
		t.Fatalf("empty histogram wrote %q", b.String())
	}
	h.Observe(50 * time.Microsecond)
	h.Observe(2 * time.Millisecond)
	h.Observe(time.Minute)
	h.Write(&b, "x_seconds", "api", "Produce")
	out := b.String()
	for _, want := range []string{
		`x_seconds_bucket{api="Produce",le="0.0001"} 1` + "\n",
		`x_seconds_bucket{api="Produce",le="0.001"} 1` + "\n",
		`x_seconds_bucket{api="Produce",le="0.005"} 2` + "\n",
		`x_seconds_bucket{api="Produce",le="30"} 2` + "\n",
		`x_seconds_bucket{api="Produce",le="+Inf"} 3` + "\n",
		`x_seconds_sum{api="Produce"} 60.00205` + "\n",
		`x_seconds_count{api="Produce"} 3` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if h.Count() != 3 {
		t.Fatalf("Count %d", h.Count())
	}
	b.Reset()
	h.Write(&b, "y_seconds", "", "")
	if !strings.Contains(b.String(), "y_seconds_bucket{le=\"+Inf\"} 3\n") || !strings.Contains(b.String(), "y_seconds_count 3\n") {
		t.Fatalf("unlabelled:\n%s", b.String())
	}
}

func TestObserveAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(100, func() { h.Observe(time.Millisecond) }); n != 0 {
		t.Fatalf("Observe allocates %v", n)
	}
}

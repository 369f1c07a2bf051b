package main

import (
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
)

// TestGomaxprocsFlag runs the binary with --gomaxprocs 1 and without, and
// reads what its runtime was given from /metrics and its start-up log.
func TestGomaxprocsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want func(float64) bool
		what string
	}{
		{[]string{"--gomaxprocs", "1"}, func(v float64) bool { return v == 1 }, "1"},
		{[]string{"--gomaxprocs", "3"}, func(v float64) bool { return v == 3 }, "3"},
		{nil, func(v float64) bool { return v >= 1 }, "the runtime's choice (at least 1)"},
	} {
		args := append([]string{"--listen", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, c.args...)
		p := kiggyproc.Start(t, kiggyproc.Config{Args: args})
		m, err := p.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		v, ok := m["go_sched_gomaxprocs_threads"]
		if !ok || !c.want(v) {
			t.Errorf("args %q: go_sched_gomaxprocs_threads = %v (present %v), want %s", c.args, v, ok, c.what)
		}
		if log := p.Tail(100); c.args != nil && !strings.Contains(log, `"gomaxprocs":`+c.what) {
			t.Errorf("args %q: the start-up log does not say gomaxprocs %s:\n%s", c.args, c.what, log)
		}
	}
}

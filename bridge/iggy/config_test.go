package iggy

import (
	"runtime"
	"testing"
)

// TestDefaultPoolSize checks the pool's default, DefaultPoolSize or
// 4 × GOMAXPROCS where more, at most maxPoolSize; that the readiness waits'
// sessions follow it; and that a size set is kept.
func TestDefaultPoolSize(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ procs, want int }{
		{1, DefaultPoolSize},
		{2, DefaultPoolSize},
		{8, DefaultPoolSize},
		{16, 64},
		{512, maxPoolSize},
	} {
		runtime.GOMAXPROCS(tc.procs)
		var c Config
		c.normalize()
		if c.PoolSize != tc.want || c.WaitSessions != tc.want {
			t.Errorf("GOMAXPROCS %d: PoolSize %d, WaitSessions %d; want %d", tc.procs, c.PoolSize, c.WaitSessions, tc.want)
		}
		if err := c.validate(); err != nil {
			t.Errorf("GOMAXPROCS %d: %v", tc.procs, err)
		}
	}
	c := Config{PoolSize: 8}
	c.normalize()
	if c.PoolSize != 8 {
		t.Errorf("a PoolSize set is kept: got %d", c.PoolSize)
	}
}

// TestReadAheadWorkers checks that the read-ahead pollers follow the CPUs
// (two per GOMAXPROCS thread, at most 8) and at most half the pool, not
// the pool alone: a pool of 32 on two CPUs gets 4, as one of 8 does.
func TestReadAheadWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ procs, pool, want int }{
		{1, 4, 2},
		{2, 8, 4},
		{2, 32, 4},
		{2, 4, 2},
		{2, 1, 1},
		{16, 64, 8},
	} {
		runtime.GOMAXPROCS(tc.procs)
		if got := readAheadWorkers(tc.pool); got != tc.want {
			t.Errorf("GOMAXPROCS %d, pool %d: %d read-ahead workers, want %d", tc.procs, tc.pool, got, tc.want)
		}
	}
}

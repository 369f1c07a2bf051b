package main

import (
	"runtime"
	"runtime/debug"
	"time"
)

// The gateway process's memory policy (bridge.Config.ReclaimMemory): the
// library leaves GC to its user; this binary hands memory back to the OS
// when it has gone quiet after a burst, and after unusually large decodes.

// reclaimIdleBytes: memory the process holds beyond its live heap that an
// idle gateway hands back to the OS. The runtime's own scavenger keeps what
// fits under the next GC's goal (twice the live heap), so after a burst
// that left, say, 40 MiB live, up to about that much again stays resident
// unless this policy returns it.
const reclaimIdleBytes = 16 << 20

// reclaimAfter is how long no request may arrive before the gateway counts
// as idle: under load a forced collection and scavenge of a large heap
// would stall requests, and the load's own GCs keep garbage in check.
const reclaimAfter = 4 * time.Second

// reclaimMemory is the policy the gateway's janitor calls every tick. A
// large decode (a compression bomb at the decode budget leaves the heap's
// high-water mark resident; the Go scavenger alone takes minutes) returns
// freed memory at once. An idle gateway with no GC for 10 s and more than
// reclaimIdleBytes of garbage and freed spans still resident collects and
// returns them: without it the garbage of, say, a connection storm stays in
// RSS until Go's 2-minute forced GC and the scavenger's slow pace.
func reclaimMemory(idle time.Duration, bigDecode bool) {
	if bigDecode {
		debug.FreeOSMemory()
	}
	if idle < reclaimAfter {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	quiet := time.Since(time.Unix(0, int64(ms.LastGC))) > 10*time.Second
	// The heap live at the last GC is about NextGC/2 (GOGC=100): what is
	// allocated beyond it is garbage, and idle spans not yet released are
	// held for nothing. A large live heap (the embedded log's data) costs
	// nothing here.
	live := min(ms.NextGC/2, ms.HeapAlloc)
	retained := ms.HeapAlloc - live + ms.HeapIdle - ms.HeapReleased
	if quiet && retained > reclaimIdleBytes {
		// Two collections: the first only moves sync.Pool contents (the
		// engine's buffers of connections now closed) to the pools' victim
		// caches; FreeOSMemory's drops them and returns the spans.
		runtime.GC()
		debug.FreeOSMemory()
	}
}

// Package hostile is kiggy's end-to-end hostile-input suite: it
// builds cmd/kiggy, runs it as a process on 127.0.0.1, and attacks it with
// malformed, oversized, lying, compressed-bomb, slow, silent and never-reading
// peers while a well-behaved franz-go producer keeps producing. Each case then
// checks that the good producer saw no error and no produce slower than one
// second, that the gateway answered or closed the way Kafka would, and that
// its memory stayed bounded. After the suite the process's RSS, goroutine
// count and close-reason counters are checked against their baselines.
//
// The engine package has unit-level hostile-peer tests; this suite proves the
// same properties of the shipped binary, wired to the embedded log.
//
//	go test ./tests/hostile/ -count=1 -v
//	KIGGY_TEST_ENGINE=net go test ./tests/hostile/ -count=1
//	KIGGY_HOSTILE_LOG=/tmp/kiggy.log GODEBUG=gctrace=1 go test ./tests/hostile/ -count=1 -v
//	KIGGY_TEST_BACKEND=iggy go test ./tests/hostile/ -count=1 -run Flood
//
// The state floods (docs/LIMITS.md, "State clients can create"), producer
// ids aside, each run a kiggy of their own beside a steady acks=all producer and a consumer group
// (steady_test.go); KIGGY_TEST_BACKEND=iggy runs them on a real iggy-server
// instead of the embedded log. KIGGY_TEST_ENGINE picks --engine; KIGGY_HOSTILE_LOG keeps the process's
// whole log (and a goroutine dump when a case finds it stuck); GODEBUG is
// passed through to the process. The request floods run against a
// request quota that throttles the flood's client id (floodQuota,
// docs/design/quotas.md); KIGGY_HOSTILE_NO_QUOTA=1 runs them without it,
// for the steady producer's p99 both ways; KIGGY_HOSTILE_FLAGS adds kiggy
// flags to every kiggy the suite starts, to compare one binary with a
// setting and without it. A produce slower than one second counts
// against the gateway unless kiggy's threads demonstrably waited for a CPU
// that long (sched_test.go); HarnessCatchesStall proves a frozen gateway
// still fails.
//
// The suite needs Linux (/proc, RLIMIT_NOFILE, root or a hard limit of
// 16384 open files) and takes about a minute and a half on two cores, the
// floods included; -short skips TestHostile.
package hostile

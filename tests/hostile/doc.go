// Package hostile is kiggy's end-to-end hostile-input suite (issue 9): it
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
//
// The suite needs Linux (/proc, RLIMIT_NOFILE) and takes about two minutes;
// -short skips it.
package hostile

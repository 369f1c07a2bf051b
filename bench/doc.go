// Package bench is kiggy's end-to-end benchmark harness: it starts Apache
// Kafka 4.x (one KRaft node), kiggy on its embedded log, kiggy on the Iggy
// backend (against iggytest or a given Iggy server) and a null broker, each
// as a fresh process, drives the same franz-go producer load against each in
// turn (alternating the order across repetitions), reads everything back,
// runs kafka-producer-perf-test with the same arguments, and reports
// throughput, produce latency percentiles, server CPU seconds per GB (from
// /proc/<pid>/stat), peak RSS (VmHWM) and the ratios kiggy/Kafka and
// kiggy/null. With Config.Transactions (kbench -txn) every session also
// drives transactional producers (one transactional id each, committing
// every 100 ms by default, like Kafka Streams under exactly_once_v2) and
// reads their topic back at read_uncommitted and read_committed (txn.go).
// Command kbench (bench/cmd/kbench, `make bench`) is its front
// end; docs/BENCHMARKS.md explains every figure and records the latest run.
// RunRebalance (rebalance.go, command krebalance) uses the same targets for
// another question: how long a KIP-848 consumer group takes to settle when
// it starts, when a member joins and when one leaves, and what its other
// members see meanwhile.
//
// Run is the entry point: it returns a Report, printed with Report.Print and
// written with Report.WriteJSON. Report.Failed reports a target that failed
// or records read back that differ from the records acknowledged. Every
// process Run starts is stopped, and the Kafka JVM waited for, before it
// returns, on failure and cancellation too.
package bench

// Package interop holds kiggy's produce interop suite: stock Kafka clients
// (kcat, the Java 4.x console producer, perf test and a transactional
// producer, franz-go, sarama, kafka-go) produce over TCP, and every record is
// read back and compared with what was sent.
//
// The suite runs against a target: the in-process kiggy gateway
// (internal/kiggytest) by default, or a real Apache Kafka 4.x broker
// (internal/kafkatest) with KIGGY_INTEROP_TARGET=kafka, which proves the
// suite itself against the real thing. Tools come from
// .ci/install-test-tools.sh; a missing tool skips its test, or fails it with
// KIGGY_REQUIRE_TOOLS=1.
//
//	go test ./tests/interop/
//	KIGGY_INTEROP_TARGET=kafka KIGGY_REQUIRE_TOOLS=1 go test ./tests/interop/ -count=1
package interop

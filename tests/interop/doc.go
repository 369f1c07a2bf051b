// Package interop holds kiggy's interop suite: stock Kafka clients over TCP.
// Producers (kcat, the Java 4.x console producer, perf test, verifiable
// producer and a transactional producer, franz-go, sarama, kafka-go)
// produce, and every record is read back and compared with what was sent;
// idempotent producers must store each record exactly once, also when
// replies are lost or kiggy is killed mid-run. Consumers (kcat -C
// and -G, the Java console consumer, a group of Java KafkaConsumers) read
// back what kcat and franz-go produced, resume from their group's commits
// and never rewind past them. The Java admin tools (kafka-topics,
// kafka-configs, kafka-consumer-groups) and kcat -L manage and describe
// topics, configs and groups. docs/COMPATIBILITY.md is the resulting client
// matrix.
//
// The suite runs against a target: the in-process kiggy gateway
// (internal/testing/kiggytest; KIGGY_TEST_BACKEND=iggy puts it on the Iggy backend)
// by default, or a real Apache Kafka 4.x broker (internal/testing/kafkatest) with
// KIGGY_INTEROP_TARGET=kafka, which proves the suite itself against the real
// thing. Tools come from .ci/install-test-tools.sh; a missing tool skips its
// test, or fails it with KIGGY_REQUIRE_TOOLS=1. Java programs the tests run
// are in tests/java/src, compiled by the tests with javac.
//
//	go test ./tests/interop/
//	KIGGY_TEST_BACKEND=iggy go test ./tests/interop/
//	KIGGY_INTEROP_TARGET=kafka KIGGY_REQUIRE_TOOLS=1 go test ./tests/interop/ -count=1
package interop

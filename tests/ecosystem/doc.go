// Package ecosystem proves that the wider Kafka ecosystem runs on kiggy
// unmodified: a Kafka Streams 4.4 application (word count with a
// repartition topic and a state store), a Kafka Connect 4.4 distributed
// worker with a source and a sink connector of our own, and the non-Java
// clients confluent-kafka-python (librdkafka), aiokafka and kafkajs
// (produce with each codec, consume in a group, commit and resume, admin
// create/describe/delete).
//
// Every test runs against two targets, as parallel subtests: the in-process
// kiggy gateway (internal/testing/kiggytest; KIGGY_TEST_BACKEND=iggy puts it on the
// Iggy backend) and a real Apache Kafka 4.4 broker (internal/testing/kafkatest),
// which proves that the test checks the right thing. The Java programs are
// in tests/java/src/kiggy/ecosystem (compiled by the tests with javac), the
// Python scripts in tests/python and the Node scripts in tests/node; all
// their tools come from .ci/install-test-tools.sh. A missing tool skips its
// test, or fails it with KIGGY_REQUIRE_TOOLS=1. docs/COMPATIBILITY.md lists
// the results.
//
//	go test ./tests/ecosystem/
//	KIGGY_ECOSYSTEM_TARGET=kiggy go test ./tests/ecosystem/   # kiggy only
package ecosystem

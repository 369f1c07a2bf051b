// Package transactions is the end-to-end proof of Kafka transactions
// through kiggy: exactly-once consume-transform-produce, the visibility of
// committed and aborted transactions to read_committed and read_uncommitted
// consumers, the last stable offset, zombie fencing, the transaction
// timeout, and two real exactly-once programs with crashes: Kafka's own
// TransactionalMessageCopier and a Kafka Streams exactly_once_v2
// application.
//
// Every test but the cluster tests (below) runs against two targets, as
// parallel subtests with the same assertions: the in-process kiggy gateway
// (internal/testing/kiggytest) and a real Apache Kafka 4.4 broker
// (internal/testing/kafkatest), which proves that each test checks the
// right thing. The tests that kill kiggy run it
// as a process (internal/testing/kiggyproc) on the real iggy-server
// (internal/testing/iggyserver), since the embedded log is in memory and a
// killed kiggy on it loses everything by design.
//
//	TestTxnETL               franz-go GroupTransactSession ETL, a member joining and one crashing mid-transaction
//	TestTxnVisibility        franz-go: aborted txn A, committed txn B; read_committed vs read_uncommitted; LSO vs high watermark
//	TestTxnVisibilityPython  the same with confluent-kafka-python (tests/python/txn_visibility.py)
//	TestTxnFencing           a second producer with the same transactional.id fences the first
//	TestTxnTimeout           a transaction left open past transaction.timeout.ms is aborted by the coordinator
//	TestTxnCopier            Kafka's TransactionalMessageCopier copies 20,000 records exactly once
//	TestTxnCopierKill        the same while kiggy (or the Kafka broker) is killed with SIGKILL and restarted, twice
//	TestStreamsEOS           Kafka Streams exactly_once_v2 word count: exact counts under read_committed
//	TestStreamsEOSKill       the same with the Streams JVM killed with SIGKILL mid-run and restarted
//
// The cluster tests run against kiggy only: three kiggy processes as one
// cluster (--cluster-membership iggy) over one real iggy-server, clients
// bootstrapped from all three, instances killed with SIGKILL mid-run, one
// at a time, and restarted on their addresses (Kafka's side of the same
// assertions is the single-broker tests above). KIGGY_TXN_CLUSTER_LOG=debug sets the
// instances' log level (and has the ETL members log franz-go's account to
// stderr), KIGGY_TXN_CLUSTER_LOGS=DIR keeps the instances' logs.
//
//	TestTxnCopierClusterKill the copier, its transaction coordinator killed at a third (down 3 s), its group coordinator at two thirds
//	TestTxnETLCluster        TestTxnETL with the group coordinator killed mid-run (down 3 s)
//	TestStreamsEOSCluster    the word count, its producer's transaction coordinator killed mid-transaction, then its group coordinator
//
// The Java program is in tests/java/src/kiggy/transactions (compiled by the
// tests with javac), the Python script is tests/python/txn_visibility.py;
// their tools come from .ci/install-test-tools.sh. A missing tool (java,
// the Kafka jars, python3 with confluent-kafka, iggy-server) skips its
// test, or fails it with KIGGY_REQUIRE_TOOLS=1.
//
//	go test ./tests/transactions/
//	KIGGY_TXN_TARGET=kafka go test ./tests/transactions/   # Kafka only
//	KIGGY_TXN_TARGET=kiggy go test ./tests/transactions/   # kiggy only
package transactions

package kgosuite

// KnownGap is a test of franz-go's kgo suite (v1.22.3, go.mod's) that
// TestKgoSuite does not hold against kiggy, and why.
type KnownGap struct {
	// Test is the test's exact name: a top-level test in KnownGaps; in
	// ExpectedSkips also a subtest ("TestShareGroup/ack"), which covers
	// the subtests below it.
	Test string
	// Reason is why it cannot pass against kiggy.
	Reason string
}

// KnownGaps are the tests TestKgoSuite skips (-test.skip): each needs a
// feature kiggy does not have, or cannot pass against kiggy for the reason
// given. Each one passes against Apache Kafka 4.4 (doc.go says how that was
// checked). Nothing flaky belongs here: a test that fails now and then
// against kiggy is a kiggy bug to fix, or to report upstream.
var KnownGaps = []KnownGap{
	// franz-go's transactional ETL (GroupTransactSession, 500,000 records
	// through three groups, read_committed) passes against kiggy on a real
	// iggy-server when run alone (1 min 51 s, -test.run ^TestTxnEtl$) and
	// in CI once failed inside the whole suite on 2 cores: a member's poll
	// got "unable to join group session: UNKNOWN_MEMBER_ID" in the range
	// subtest (its 20 s session or the rebalance timeout ran out while the
	// machine ran the whole suite at once). Until that is explained it is
	// run on its own by hand, and the same pattern runs in CI in
	// tests/transactions (TestTxnETL, against kiggy and Kafka).
	{"TestTxnEtl", "transactions: passes alone against kiggy; inside the whole suite on 2 cores one member once lost its group session (UNKNOWN_MEMBER_ID), not yet explained; tests/transactions TestTxnETL runs the pattern in CI"},

	// Three 1 MiB records of zeros are produced gzip-compressed into one
	// batch; the test wants the consumer's MaxDecompressBatchBytes(1 MiB)
	// to refuse that batch (ErrDecompressTooLarge). kiggy stores records
	// uncompressed and, on a topic with compression.type=producer (the
	// default), serves them uncompressed (docs/MAPPING.md), so there is
	// nothing to decompress and PollFetches returns the records: "got err
	// <nil>, want ErrDecompressTooLarge".
	{"TestConsumeMaxDecompressBatchBytes", "kiggy serves Fetch batches re-encoded, uncompressed on a compression.type=producer topic, so the consumer never sees the gzip batch whose decompressed size the test expects it to refuse"},

	// The producer compresses with franz-go's default codec (snappy); the
	// test's pool wants PutDecompressBytes called, which franz-go does only
	// after decompressing a fetched batch. kiggy serves the batch
	// uncompressed (as above): "did not put decompress!".
	{"TestPooling", "kiggy serves Fetch batches uncompressed on a compression.type=producer topic, so the consumer decompresses nothing and never returns the decompression buffer the test checks for"},

	// internalTopic (helpers_test.go) first creates a topic with the
	// kfake-only config kfake.is_internal, which kiggy refuses with
	// INVALID_CONFIG as Kafka does, then asks for a group coordinator and
	// waits 30 s for __consumer_offsets to appear in Metadata as internal.
	// kiggy keeps committed offsets in Iggy, not in a __consumer_offsets
	// topic: Metadata answers UNKNOWN_TOPIC_OR_PARTITION for it and marks
	// no topic internal, so the test fails on "topic __consumer_offsets is
	// not in metadata" and "skipped_internal [] is missing
	// __consumer_offsets" after 45 s. Its include and exclude patterns do
	// work (TestIssue434 also consumes by regex).
	{"TestConsumeRegex", "kiggy has no internal topics: committed offsets live in Iggy, not in a __consumer_offsets topic, so Metadata never shows the internal topic the test waits for and checks the regex skips"},

	// KIP-848 with a regex the broker resolves: the member subscribes with
	// SubscribedTopicRegex and the test wants the coordinator to assign,
	// and the client to adopt, an internal topic the regex matches. It
	// gets one from internalTopic (helpers_test.go), as TestConsumeRegex
	// does: kiggy refuses kfake.is_internal and has no __consumer_offsets,
	// so after 30 s "topic __consumer_offsets is not in metadata", and at
	// the end "__consumer_offsets is not assigned". The rest passes against
	// kiggy: both regular topics its regex matches (the broker matching the
	// whole name, franz-go wrapping it) are assigned and consumed.
	// TestGroupSimple/848 and TestGroupETL's range/848, sticky/848 and
	// sticky/848/static, which franz-go used to skip here (kiggy had no
	// ConsumerGroupHeartbeat), run and pass.
	{"Test848RegexBrokerResolves", "kiggy has no internal topics: no __consumer_offsets for the broker-resolved KIP-848 regex to match and assign, which the test waits for; the regular topics its regex matches are assigned and consumed"},
}

// ExpectedSkips are the tests that skip themselves against kiggy (t.Skip in
// franz-go's own code, after asking kiggy's ApiVersions or finding a
// setting unset); any other test that skips itself fails TestKgoSuite.
var ExpectedSkips = []KnownGap{
	// KIP-932 share groups: franz-go runs these only when ApiVersions has
	// ShareFetch (key 78) and ShareAcknowledge (key 79) v2.
	{"TestShareGroup", "KIP-932 share groups: kiggy does not serve ShareFetch or ShareAcknowledge (keys 78, 79)"},
	{"TestShareGroupETL", "KIP-932 share groups: kiggy does not serve ShareFetch or ShareAcknowledge (keys 78, 79)"},
	{"TestShareGroupAckOnClose", "KIP-932 share groups: kiggy does not serve ShareFetch or ShareAcknowledge (keys 78, 79)"},
	{"TestShareGroupOffsetsAdmin", "KIP-932 share groups: kiggy does not serve ShareFetch or ShareAcknowledge (keys 78, 79)"},
	{"TestConsumeRegexShareSkipsInternal", "KIP-932 share groups: kiggy does not serve ShareFetch or ShareAcknowledge (keys 78, 79)"},

	// The test checks that a client pinned to Kafka 0.10 fails its records
	// against a broker that no longer takes Produce v2 (Kafka 4.0 dropped
	// it); kiggy still serves Produce from v0 for old clients, so franz-go
	// skips it ("broker still takes produce v2").
	{"TestIssueProduceBrokerTooOldFailsRecords", "kiggy still takes Produce v0 to v2, which the test needs a broker to have dropped (as Kafka 4.0 did)"},

	// It runs only with KGO_TEST_OAUTH_SEEDS, a broker that accepts
	// unsecured ({"alg":"none"}) OAUTHBEARER tokens as Kafka's default
	// validator does. kiggy accepts only tokens signed by a key of
	// --sasl-oauthbearer-jwks-file and never "none" (security/sasl/oauth.go),
	// so TestKgoSuite leaves the variable unset.
	{"TestOAuthAuth", "it needs a broker accepting unsecured (alg none) OAUTHBEARER tokens; kiggy accepts only JWKS-signed ones"},
}

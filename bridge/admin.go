package bridge

// What the topic admin APIs share (19_create_topics.go, 20_delete_topics.go,
// 32_describe_configs.go, 33_alter_configs.go, 37_create_partitions.go,
// 44_incremental_alter_configs.go, 60_describe_cluster.go).

import (
	"github.com/kiggy-io/kiggy/wire"
)

// maxPartitionsPerRequest and maxRecordsPerRequest bound one CreateTopics
// or CreatePartitions request as Kafka 4.4's controller does
// (requestTooLarge, growthTooLarge): the partitions it asks for
// (ReplicationControlManager MAX_PARTITIONS_PER_BATCH, "Exceeding this
// number of topics per batch has led to out-of-memory exceptions") and the
// metadata records a CreateTopics' creations would write (QuorumController
// MAX_RECORDS_PER_USER_OP); past either, every topic of the request is
// POLICY_VIOLATION. Iggy creates at most 1,000 partitions a request
// (docs/design/iggy-protocol.md §3.5); its backend creates more in steps.
const (
	maxPartitionsPerRequest = 10_000
	maxRecordsPerRequest    = 10_000
)

// duplicateTopic is Kafka 4.4's answer (ControllerApis) to a topic named more
// than once in one CreateTopics, CreatePartitions or DeleteTopics request:
// that name is answered once, INVALID_REQUEST (42) with this message, and
// nothing is done with it; the other topics are served.
const duplicateTopic = "Duplicate topic name."

// duplicateTopicID is the same answer to a DeleteTopics (v6+) naming one
// topic id twice.
const duplicateTopicID = "Duplicate topic id."

// duplicates returns the keys that occur more than once among n items, in
// the order of their first occurrence; nil (and no allocation past the set)
// when there are none.
func duplicates[K comparable](n int, key func(i int) K) []K {
	if n < 2 {
		return nil
	}
	seen := make(map[K]bool, n) // true once a key is reported
	var dups []K
	for i := range n {
		k := key(i)
		reported, ok := seen[k]
		switch {
		case !ok:
			seen[k] = false
		case !reported:
			seen[k] = true
			dups = append(dups, k)
		}
	}
	return dups
}

// adminState is the admin handlers' scratch space.
type adminState struct {
	createReq  wire.CreateTopicsRequest
	deleteReq  wire.DeleteTopicsRequest
	partsReq   wire.CreatePartitionsRequest
	descReq    wire.DescribeConfigsRequest
	alterReq   wire.AlterConfigsRequest
	incrReq    wire.IncrementalAlterConfigsRequest
	clusterReq wire.DescribeClusterRequest
}

package bridge

// What the topic admin APIs share (19_create_topics.go, 20_delete_topics.go,
// 32_describe_configs.go, 33_alter_configs.go, 37_create_partitions.go,
// 44_incremental_alter_configs.go, 60_describe_cluster.go).

import (
	"github.com/kiggy-io/kiggy/wire"
)

// maxPartitions is the most partitions one CreateTopics or CreatePartitions
// topic may create (docs/LIMITS.md). Iggy creates at most 1,000 per request
// (docs/design/iggy-protocol.md §3.5); its backend creates more in steps.
const maxPartitions = 100_000

// maxPartitionsPerRequest and maxRecordsPerRequest bound one CreateTopics
// request as Kafka 4.4's controller does (requestTooLarge): the partitions
// it asks for (ReplicationControlManager MAX_PARTITIONS_PER_BATCH,
// "Exceeding this number of topics per batch has led to out-of-memory
// exceptions") and the metadata records its creations would write
// (QuorumController MAX_RECORDS_PER_USER_OP); past either, every topic of
// the request is POLICY_VIOLATION.
const (
	maxPartitionsPerRequest = 10_000
	maxRecordsPerRequest    = 10_000
)

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

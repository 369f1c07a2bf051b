package bridge

// What the topic admin APIs share (19_create_topics.go, 20_delete_topics.go,
// 32_describe_configs.go, 33_alter_configs.go, 37_create_partitions.go,
// 44_incremental_alter_configs.go, 60_describe_cluster.go).

import (
	"fmt"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/wire"
)

// maxPartitions is the most partitions one CreateTopics or CreatePartitions
// topic may create (docs/LIMITS.md). Iggy creates at most 1,000 per request
// (docs/design/iggy-protocol.md §3.5); its backend creates more in steps.
const maxPartitions = 100_000

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

// topicByID finds the topic whose Kafka topic id is id, or fails with
// store.ErrUnknownTopic (the all-zero id names no topic). Kafka's metadata
// cache keeps topics by id; kiggy lists the backend's topics and compares
// their ids (docs/design/record-mapping.md §8), which costs one listing per
// lookup: only Metadata and DeleteTopics name topics by id in the versions
// served.
func (g *Gateway) topicByID(id [16]byte) (store.TopicInfo, error) {
	if id != ([16]byte{}) {
		topics, err := g.store.Topics(g.ctx)
		if err != nil {
			return store.TopicInfo{}, err
		}
		for _, t := range topics {
			if t.ID == id {
				return t, nil
			}
		}
	}
	return store.TopicInfo{}, fmt.Errorf("%w: id %x", store.ErrUnknownTopic, id)
}

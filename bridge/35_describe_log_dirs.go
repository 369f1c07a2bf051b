// DescribeLogDirs (API key 35): versions 1–4 (wire.APIs).
//
// kiggy has one log directory: the backend (store.PartitionSizer.LogDir:
// "iggy://<addresses>/<stream>", or the embedded log's memory). Each
// partition's size is what the backend holds of it (Iggy: the partition's
// size_bytes, its message headers included; the embedded log: its stored
// frames), so `kafka-log-dirs --describe` and the topic sizes of Kafka UIs
// show how much each topic takes.
//
// Differs from Kafka: TotalBytes and UsableBytes are -1 ("unknown"):
// neither Iggy nor the embedded log says how large its volume is. OffsetLag
// is 0: a partition's one replica is its log.

package bridge

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/security/acl"
	"github.com/kiggy-io/kiggy/wire"
)

func init() { handle(wire.KeyDescribeLogDirs, (*Gateway).describeLogDirs) }

// describeLogDirsTimeout bounds the backend lookups of one request.
const describeLogDirsTimeout = 30 * time.Second

// logDirLookups is how many topics one request looks up at once (one Iggy
// GetTopic each).
const logDirLookups = 8

// parallel calls fn(0..n-1) on at most width goroutines and returns when
// all have returned.
func parallel(n, width int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, width) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// describeLogDirs answers DescribeLogDirs as KafkaApis.
// handleDescribeLogDirsRequest and ReplicaManager.describeLogDirs do: with
// DESCRIBE on the cluster, the log directory with the requested partitions
// this instance holds (a null topic list: all of them); a partition or
// topic it does not hold is left out, and so is a topic none of whose
// partitions is left. Without the permission, no directory and (v3+)
// CLUSTER_AUTHORIZATION_FAILED.
func (g *Gateway) describeLogDirs(c *call) bool {
	var req wire.DescribeLogDirsRequest
	if !decodeOrClose(c, &req) {
		return false
	}
	var resp wire.DescribeLogDirsResponse
	if g.clusterCode(c, acl.OpDescribe) != wire.NoError {
		resp.ErrorCode = wire.ClusterAuthorizationFailed
	} else {
		ctx, cancel := context.WithTimeout(g.ctx, describeLogDirsTimeout)
		resp.Results = []wire.DescribeLogDirsResult{g.logDir(ctx, req.Topics)}
		cancel()
	}
	resp.CountErrors(g.errorCounter(c))
	respond(c, &resp)
	return false
}

// logDir describes the backend's log directory with the partitions of
// topics (nil: every topic) that this instance leads.
func (g *Gateway) logDir(ctx context.Context, topics []wire.TopicPartitions) wire.DescribeLogDirsResult {
	dir := wire.DescribeLogDirsResult{TotalBytes: -1, UsableBytes: -1}
	sizer, ok := g.store.(store.PartitionSizer)
	if !ok {
		dir.LogDir, dir.ErrorCode = "unknown", wire.KafkaStorageError
		return dir
	}
	dir.LogDir = sizer.LogDir()
	// want maps a topic to the partitions asked for; nil asks for all.
	want := map[string][]int32{}
	if topics == nil {
		list, err := g.listTopics(ctx)
		if err != nil {
			dir.ErrorCode = logCode(err)
			return dir
		}
		for _, t := range list {
			want[t.Name] = nil
		}
	} else {
		for _, t := range topics {
			want[t.Topic] = append(want[t.Topic], t.Partitions...)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	sizes, errs := make([][]int64, len(names)), make([]error, len(names))
	parallel(len(names), logDirLookups, func(i int) { sizes[i], errs[i] = sizer.PartitionSizes(ctx, names[i]) })
	for i, name := range names {
		if errors.Is(errs[i], store.ErrUnknownTopic) {
			continue
		}
		if errs[i] != nil {
			// ReplicaManager.describeLogDirs: a directory that cannot be
			// read is reported whole as an error.
			return wire.DescribeLogDirsResult{ErrorCode: wire.KafkaStorageError, LogDir: dir.LogDir, TotalBytes: -1, UsableBytes: -1}
		}
		sizes := sizes[i]
		parts := want[name]
		if parts == nil {
			parts = make([]int32, len(sizes))
			for i := range parts {
				parts[i] = int32(i)
			}
		} else {
			parts = slices.Compact(slices.Sorted(slices.Values(parts)))
		}
		t := wire.DescribeLogDirsTopic{Topic: name}
		for _, p := range parts {
			if p < 0 || int(p) >= len(sizes) || g.leaderCode(name, p, -1) != wire.NoError {
				continue
			}
			t.Partitions = append(t.Partitions, wire.DescribeLogDirsPartition{Partition: p, Size: sizes[p]})
		}
		if len(t.Partitions) > 0 {
			dir.Topics = append(dir.Topics, t)
		}
	}
	return dir
}

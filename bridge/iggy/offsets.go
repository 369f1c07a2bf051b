package iggy

// Kafka committed group offsets in Iggy consumer offsets (docs/IGGY.md,
// "Committed offsets"). The Iggy 0.9 server has no ExternalGroup consumer
// kind (3), fences group-kind (2) offset writes to the member that owns the
// partition, and range-checks every stored offset (refused on an empty
// partition and above current_offset). Kafka commits the next offset to read,
// so a caught-up consumer commits last+1 and Java commits 0 on an empty
// partition: neither is storable verbatim.
//
// So kiggy stores a Kafka commit c under a single consumer (kind 1) named
// "kafka.cg.<group>" as c−1, Iggy's own "last processed offset" convention:
// c−1 ≤ current_offset always holds for c ≤ high watermark, and Iggy-native
// readers polling "next" continue at c. A commit Iggy cannot hold (c = 0, or
// c beyond the high watermark) deletes the Iggy key and is kept in memory.
// The commit metadata string is kept in memory too. Every commit is also
// appended to the commit log (commitlog.go) before it is answered, and the
// memory is loaded from it when the client opens, so both survive a kiggy
// restart.

import (
	"context"
	"fmt"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// groupPrefix names a Kafka group's Iggy consumer (docs/design/record-mapping.md §5).
const groupPrefix = "kafka.cg."

// ErrInvalidGroup means a group id does not fit an Iggy consumer name.
var ErrInvalidGroup = fmt.Errorf("iggy: group id must be 1..246 bytes: %w", store.ErrInvalidGroup)

type offsetKey struct {
	group, topic string
	partition    int32
}

// memOffset is what kiggy remembers of the last commit it made itself.
type memOffset struct {
	offset   int64
	metadata string
	memOnly  bool // not stored in Iggy (c = 0 or beyond the end)
}

// offsetRequest builds [consumer][stream][topic][partition] on s's scratch
// for a Kafka group's consumer.
func (c *Client) offsetRequest(s *session, group, topic string, partition int32) []byte {
	return c.consumerRequest(s, groupPrefix, group, topic, partition)
}

// consumerRequest builds [consumer][stream][topic][partition] on s's
// scratch for the single consumer (kind 1) named prefix + name.
func (c *Client) consumerRequest(s *session, prefix, name, topic string, partition int32) []byte {
	b := append(s.begin(), proto.ConsumerSingle, proto.IDString, uint8(len(prefix)+len(name)))
	b = append(b, prefix...)
	b = append(b, name...)
	b = proto.AppendStringID(b, c.cfg.Stream)
	b = proto.AppendStringID(b, topic)
	b = append(b, 1)
	return proto.AppendU32(b, uint32(partition))
}

func checkGroup(group string) error {
	if len(group) == 0 || len(groupPrefix)+len(group) > maxNameLen {
		return ErrInvalidGroup
	}
	return nil
}

// CommitOffset stores a group's committed offset for a partition (the next
// offset to read, verbatim to Kafka); a negative offset deletes it.
func (c *Client) CommitOffset(ctx context.Context, group, topic string, partition int32, offset int64, metadata string) error {
	if err := checkGroup(group); err != nil {
		return err
	}
	if partition < 0 {
		return fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	rec := commitRecord{kind: kindCommit, partition: partition, offset: offset, group: group, topic: topic, metadata: metadata}
	if offset > 0 {
		err := c.storeOffset(ctx, group, topic, partition, uint64(offset-1))
		switch code := codeOf(err); {
		case err == nil:
			return c.logCommit(ctx, rec)
		case code == proto.CodeInvalidOffset:
			// Beyond current_offset (or an empty partition): keep it here.
			c.log.Debug("iggy: commit beyond the log end kept in memory", "group", group, "topic", topic, "partition", partition, "offset", offset)
		default:
			return c.offsetError(ctx, topic, partition, err)
		}
	}
	// offset ≤ 0 or unstorable: drop the Iggy key so it cannot shadow this
	// commit ("not found" is success).
	if err := c.deleteOffset(ctx, group, topic, partition); err != nil && codeOf(err) != proto.CodeConsumerOffsetNotFound {
		return c.offsetError(ctx, topic, partition, err)
	}
	if offset < 0 {
		rec.flags = flagDelete
		return c.logCommit(ctx, rec)
	}
	rec.flags = flagMemOnly
	return c.logCommit(ctx, rec)
}

func (c *Client) storeOffset(ctx context.Context, group, topic string, partition int32, v uint64) error {
	return c.storeConsumerOffset(ctx, groupPrefix, group, topic, partition, v)
}

// storeConsumerOffset stores offset v of the single consumer prefix + name
// on the partition with quorum acknowledgement, at the partition's route,
// sent again while every node refuses it (retryRefused).
func (c *Client) storeConsumerOffset(ctx context.Context, prefix, name, topic string, partition int32, v uint64) error {
	_, err := retryRefused(c, ctx, topic, partition, func() (struct{}, error) {
		s, err := c.acquireFor(ctx, topic, partition)
		if err != nil {
			return struct{}{}, unavailable(err)
		}
		req := proto.AppendU64(c.consumerRequest(s, prefix, name, topic, partition), v)
		req = append(req, 1) // ack: Quorum (the default)
		s, _, _, err = c.sendPartition(ctx, s, topic, partition, req, nil, proto.CodeStoreConsumerOffset)
		c.releaseFor(s)
		return struct{}{}, err
	})
	return err
}

// deleteOffset deletes a group's stored offset on the partition, likewise.
func (c *Client) deleteOffset(ctx context.Context, group, topic string, partition int32) error {
	_, err := retryRefused(c, ctx, topic, partition, func() (struct{}, error) {
		s, err := c.acquireFor(ctx, topic, partition)
		if err != nil {
			return struct{}{}, unavailable(err)
		}
		req := append(c.offsetRequest(s, group, topic, partition), 1) // ack: Quorum
		s, _, _, err = c.sendPartition(ctx, s, topic, partition, req, nil, proto.CodeDeleteConsumerOffset)
		c.releaseFor(s)
		return struct{}{}, err
	})
	return err
}

// offsetError maps consumer-offset failures; offset writes are idempotent, so
// connection failures are store.ErrUnavailable.
func (c *Client) offsetError(ctx context.Context, topic string, partition int32, err error) error {
	switch codeOf(err) {
	case proto.CodeResourceNotFound:
		return c.classify(ctx, topic, partition, err)
	case proto.CodeStreamIDNotFound, proto.CodeTopicIDNotFound:
		return fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	case proto.CodePartitionNotFound:
		return fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	case 0, proto.CodeTransientNotAccepted:
		// 58: nothing was stored; no node took it (docs/IGGY.md, "Iggy clusters").
		return unavailable(err)
	}
	return err
}

// fetchOffset returns a group's committed offset. Iggy's stored value wins;
// the in-memory commit answers only when Iggy has none. The metadata string
// is returned when the offset is the one this process committed.
func (c *Client) fetchOffset(ctx context.Context, group, topic string, partition int32) (int64, string, bool, error) {
	if err := checkGroup(group); err != nil {
		return 0, "", false, err
	}
	if partition < 0 {
		return 0, "", false, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, partition)
	}
	if !validName(topic) {
		return 0, "", false, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	}
	s, err := c.acquireFor(ctx, topic, partition)
	if err != nil {
		return 0, "", false, unavailable(err)
	}
	body, _, err := s.do(ctx, proto.CodeGetConsumerOffset, c.offsetRequest(s, group, topic, partition))
	var stored uint64
	var found bool
	if err == nil && len(body) > 0 {
		stored, err = decodeStoredOffset(body)
		found = true
	}
	c.releaseFor(s)
	if err != nil {
		return 0, "", false, c.offsetError(ctx, topic, partition, err)
	}
	c.offMu.Lock()
	mem, ok := c.offsets[offsetKey{group, topic, partition}]
	c.offMu.Unlock()
	switch {
	case found && ok && mem.offset == int64(stored)+1:
		return mem.offset, mem.metadata, true, nil
	case found:
		return int64(stored) + 1, "", true, nil
	case ok && mem.memOnly:
		return mem.offset, mem.metadata, true, nil
	}
	return 0, "", false, nil
}

// decodeStoredOffset reads a non-empty GetConsumerOffset reply (§3.9):
// [partition_id u32][current_offset u64][stored_offset u64].
func decodeStoredOffset(body []byte) (uint64, error) {
	r := proto.NewReader(body)
	r.U32()
	r.U64()
	stored := r.U64()
	if r.Complete() != nil || stored >= 1<<62 {
		return 0, fmt.Errorf("%w: GetConsumerOffset reply", proto.ErrMalformed)
	}
	return stored, nil
}

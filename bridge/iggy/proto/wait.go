package proto

import (
	"encoding/binary"
	"errors"
)

// Protocol 0.12's deferred reads (docs/design/iggy-protocol.md §9): a
// readiness wait the server answers when a partition holds a message at a
// start point, or when the wait has passed.
const (
	// CodePollMessagesDeferred is a poll the server answers once enough
	// messages are there (0.12 only; kiggy does not send it).
	CodePollMessagesDeferred uint32 = 106
	// CodeWaitForMessages waits until one of up to MaxPartitionsPerRequest
	// partitions of a topic holds a message at its start point (0.12 only).
	CodeWaitForMessages uint32 = 107
	// CodeCancelDeferredRequest cancels a deferred request on the same
	// connection. iggy_binary_protocol 0.11.1-edge.4 codes.rs: "The body is
	// empty, `request` identifies the original request, and no reply is
	// sent."
	CodeCancelDeferredRequest uint32 = 108
)

// Limits of a readiness wait (iggy_binary_protocol 0.11.1-edge.4
// requests/messages/poll_messages.rs and lib.rs).
const (
	// MaxPartitionsPerRequest: "MAX_PARTITIONS_PER_REQUEST: u32 = 1000".
	MaxPartitionsPerRequest = 1000
	// MaxDeferredWaitMicros: "MAX_DEFERRED_POLL_WAIT_US: u64 = 600_000_000"
	// ("Finite protocol ceiling; servers may configure a lower admission
	// limit").
	MaxDeferredWaitMicros uint64 = 600_000_000
	// MaxDeferredTimeoutMicros: "the longest wait plus headroom", 30 s.
	MaxDeferredTimeoutMicros uint64 = MaxDeferredWaitMicros + 30_000_000
	// MinDeferredReplyMarginMicros: "Least time a waiting request leaves
	// between the end of its wait and its request timeout. [...] A zero
	// wait answers at once and needs no margin."
	MinDeferredReplyMarginMicros uint64 = 1_000_000
)

// WaitTargetSize is the size of one target of a wait: [partition_id u32][strategy u8]
// [value u64] (wait_for_messages.rs: "TARGET_SIZE: usize =
// size_of::<u32>() + STRATEGY_SIZE", STRATEGY_SIZE = 9).
const WaitTargetSize = 4 + 9

// DeferredTimeoutCoversWait reports whether a request timeout covers a wait
// and its reply margin (poll_messages.rs deferred_timeout_covers_wait:
// "wait_us == 0 || request_timeout_us >= wait_us.saturating_add(
// MIN_DEFERRED_POLL_REPLY_MARGIN_US)").
func DeferredTimeoutCoversWait(waitMicros, timeoutMicros uint64) bool {
	if waitMicros == 0 {
		return true
	}
	s := waitMicros + MinDeferredReplyMarginMicros
	if s < waitMicros { // saturating_add
		s = ^uint64(0)
	}
	return timeoutMicros >= s
}

// Errors of a readiness wait a sender builds or a reply decodes.
var (
	ErrWaitLimits     = errors.New("iggy: invalid readiness wait, request timeout or partitions")
	ErrWaitDuplicate  = errors.New("iggy: duplicate partition in readiness wait")
	ErrWaitReply      = errors.New("iggy: malformed WaitForMessages reply")
	ErrWaitReplyCount = errors.New("iggy: WaitForMessages reply names too many partitions")
)

// ValidateWait checks a wait's limits as the crate's
// WaitForMessagesRequest::validate does before a server takes it
// (wait_for_messages.rs: "Returns `WireError::Validation` for a wait or
// request timeout out of range, no partitions, too many partitions or a
// duplicate partition"). partitions must be sorted ascending (as
// AppendWaitForMessages sends them), which makes the duplicate check a
// scan of neighbours.
func ValidateWait(waitMicros, timeoutMicros uint64, partitions []uint32) error {
	if waitMicros > MaxDeferredWaitMicros ||
		timeoutMicros == 0 ||
		!DeferredTimeoutCoversWait(waitMicros, timeoutMicros) ||
		timeoutMicros > MaxDeferredTimeoutMicros ||
		len(partitions) == 0 ||
		len(partitions) > MaxPartitionsPerRequest {
		return ErrWaitLimits
	}
	for i := 1; i < len(partitions); i++ {
		if partitions[i] <= partitions[i-1] {
			return ErrWaitDuplicate
		}
	}
	return nil
}

// AppendWaitForMessages appends a WaitForMessages body (code 107) for a
// single consumer of numeric id 0 (the consumer kiggy's polls name; a wait
// "Reads and commits nothing") on stream and topic by name, each partition
// with the strategy Offset at its offset:
//
//	[consumer][stream_id][topic_id][wait_us:8 LE][request_timeout_us:8 LE]
//	[partitions_count:4 LE] partitions_count x [partition_id:4 LE][strategy:9]
//
// (iggy_binary_protocol 0.11.1-edge.4 requests/messages/wait_for_messages.rs;
// "The server accepts the offset and next strategies only.") partitions and
// offsets have the same length; ValidateWait checks the limits.
func AppendWaitForMessages(dst []byte, stream, topic string, waitMicros, timeoutMicros uint64, partitions []uint32, offsets []uint64) []byte {
	dst = append(dst, ConsumerSingle)
	dst = AppendNumericID(dst, 0)
	dst = AppendStringID(dst, stream)
	dst = AppendStringID(dst, topic)
	dst = AppendU64(dst, waitMicros)
	dst = AppendU64(dst, timeoutMicros)
	dst = AppendU32(dst, uint32(len(partitions)))
	for i, p := range partitions {
		dst = AppendU32(dst, p)
		dst = append(dst, PollOffset)
		dst = AppendU64(dst, offsets[i])
	}
	return dst
}

// WaitReply is a decoded WaitForMessages reply: the partitions that hold a
// message at their start point, in the order the server named them
// (responses/messages/wait_for_messages.rs: "An empty list means that the
// wait expired."). It aliases the reply body.
type WaitReply struct {
	ids []byte
}

// Len is how many partitions the reply names; 0 = the wait expired.
func (w WaitReply) Len() int { return len(w.ids) / 4 }

// Partition returns the i-th partition named, 0 ≤ i < Len.
func (w WaitReply) Partition(i int) uint32 { return binary.LittleEndian.Uint32(w.ids[4*i:]) }

// DecodeWaitReply reads a WaitForMessages reply body
// (responses/messages/wait_for_messages.rs: "Wire format:
// `[partitions_count:4 LE] partitions_count x [partition_id:4 LE]`"). The
// crate refuses a count above MAX_PARTITIONS_PER_REQUEST ("readiness reply
// names too many partitions") and a short body; kiggy also refuses bytes
// past the list, which no server sends. It does not allocate.
func DecodeWaitReply(body []byte) (WaitReply, error) {
	if len(body) < 4 {
		return WaitReply{}, ErrWaitReply
	}
	n := binary.LittleEndian.Uint32(body)
	if n > MaxPartitionsPerRequest {
		return WaitReply{}, ErrWaitReplyCount
	}
	if uint64(len(body)) != 4+4*uint64(n) {
		return WaitReply{}, ErrWaitReply
	}
	return WaitReply{ids: body[4:]}, nil
}

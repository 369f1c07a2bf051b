// Package proto holds the Apache Iggy 0.9 binary TCP protocol primitives that
// both kiggy's Iggy client (bridge/iggy) and its test server
// (bridge/iggy/iggytest) speak: the 256-byte VSR header, command codes and
// operations, error codes and eviction reasons, the little-endian cursor and
// append encoders, and the SendMessages batch with its XXH3 checksums.
//
// Every layout here is docs/design/iggy-protocol.md's; bare section numbers
// (§1.3) in this package's comments refer to docs/design/iggy-protocol.md. The package does no I/O and allocates nothing on its encode/decode
// paths.
package proto

import "encoding/binary"

// HeaderSize is the size of the VSR header in front of every frame, in both
// directions (§1.2: "every frame ... is a fixed 256-byte VSR header followed
// by the body").
const HeaderSize = 256

// MaxFrameSize is the default bound on a whole frame, header included
// (§1.2: max_message_size defaults to 64 MiB; the SDKs reject larger replies).
const MaxFrameSize = 64 << 20

// Header command bytes (offset 60).
const (
	CommandRequest  = 5  // client → server
	CommandReply    = 8  // server → client
	CommandEviction = 13 // server → client, session-terminal
	// CommandMax is the largest valid command discriminant; the server closes
	// the connection on anything larger (§1.2).
	CommandMax = 29
)

// Request header field offsets (§1.3).
const (
	offSize            = 48
	offCommand         = 60
	offClient          = 128
	offRequestChecksum = 144
	offReqTimestamp    = 160
	offRequest         = 168
	offOperation       = 176
	offSession         = 184
	offUserID          = 192
	offCode            = 196
	// 0.12 only (§9): the partition context a partition request captured.
	offPartitionIncarnation = 200
	offOwnerGeneration      = 208
	offMinimumMetadataOp    = 216
)

// Reply header field offsets (§1.5) and eviction fields (§1.6).
const (
	offReplyRequestChecksum = 128
	offReplyClient          = 160
	offReplyOp              = 176
	offReplyCommit          = 184
	offReplyTimestamp       = 192
	offReplyRequest         = 200
	offReplyOperation       = 208
	offReplyStatus          = 216
	offEvictClient          = 128
	offEvictServerVersion   = 144
	offEvictServerMin       = 148
	offEvictReason          = 255
)

// Operation bytes (offset 176 in a request, 208 in a reply;
// consensus/operation.rs).
const (
	OpReserved            uint8 = 0
	OpRegister            uint8 = 1
	OpNonReplicated       uint8 = 2
	OpLogout              uint8 = 3
	OpCreateStream        uint8 = 128
	OpUpdateStream        uint8 = 129
	OpDeleteStream        uint8 = 130
	OpPurgeStream         uint8 = 131
	OpCreateTopic         uint8 = 132
	OpUpdateTopic         uint8 = 133
	OpDeleteTopic         uint8 = 134
	OpPurgeTopic          uint8 = 135
	OpCreatePartitions    uint8 = 136
	OpDeletePartitions    uint8 = 137
	OpDeleteSegments      uint8 = 138
	OpCreateConsumerGroup uint8 = 139
	OpDeleteConsumerGroup uint8 = 140
	OpCreateUser          uint8 = 141
	OpUpdateUser          uint8 = 142
	OpDeleteUser          uint8 = 143
	OpChangePassword      uint8 = 144
	OpUpdatePermissions   uint8 = 145
	OpCreatePAT           uint8 = 146
	OpDeletePAT           uint8 = 147
	OpJoinConsumerGroup   uint8 = 148
	OpLeaveConsumerGroup  uint8 = 149
	// OpUpdateResource is 0.12's generic option patch (§9); 0.12 retires
	// UpdateStream (129), PurgeStream (131), UpdateTopic (133), PurgeTopic
	// (135) and UpdateUser (142).
	OpUpdateResource       uint8 = 150
	OpSendMessages         uint8 = 160
	OpStoreConsumerOffset  uint8 = 161
	OpDeleteConsumerOffset uint8 = 162
)

// ValidOperationIn reports whether op is a client-sendable operation of
// dialect d: ValidOperation, less the operations d does not define.
func ValidOperationIn(d Dialect, op uint8) bool {
	if d == Dialect012 {
		switch op {
		case OpUpdateStream, OpPurgeStream, OpUpdateTopic, OpPurgeTopic, OpUpdateUser:
			return false // retired in 0.12 (§9)
		}
		return ValidOperation(op)
	}
	return op != OpUpdateResource && ValidOperation(op)
}

// ValidOperation reports whether op is a defined client-sendable operation
// other than Reserved in either dialect (§1.3 header validation: "operation
// must be a defined discriminant other than 0").
func ValidOperation(op uint8) bool {
	switch {
	case op >= OpRegister && op <= OpLogout:
		return true
	case op >= OpCreateStream && op <= OpUpdateResource:
		return true
	case op >= OpSendMessages && op <= OpDeleteConsumerOffset:
		return true
	}
	return false
}

// IsMetadata reports whether op is a metadata (replicated, 128–149) operation.
func IsMetadata(op uint8) bool { return op >= OpCreateStream && op <= OpUpdateResource }

// IsPartition reports whether op is a partition-plane write (160–162).
func IsPartition(op uint8) bool { return op >= OpSendMessages && op <= OpDeleteConsumerOffset }

// ResultFramed reports whether a status-0 reply body for op starts with a
// result section (§1.7 step 3: metadata ops, Store/DeleteConsumerOffset, and
// Register when its body is non-empty).
func ResultFramed(op uint8) bool {
	return IsMetadata(op) || op == OpStoreConsumerOffset || op == OpDeleteConsumerOffset || op == OpRegister
}

// Internal operations a committed metadata reply may carry instead of the
// request's (core/metadata/src/impls/metadata.rs projects CreateTopic and
// CreatePartitions into these before committing, and the reply echoes the
// committed operation).
const (
	OpCreateTopicWithAssignments      uint8 = 64
	OpCreatePartitionsWithAssignments uint8 = 65
	// OpUpdateTopicResolved is what 0.12 commits an UpdateResource of a
	// topic as (operation.rs: "Prepare-resolved UpdateResource on a topic").
	OpUpdateTopicResolved uint8 = 73
)

// CommittedOperation returns the operation a committed (status 0) reply to
// op carries: CreateTopic → CreateTopicWithAssignments (64), CreatePartitions
// → CreatePartitionsWithAssignments (65), every other op itself.
func CommittedOperation(op uint8) uint8 {
	switch op {
	case OpCreateTopic:
		return OpCreateTopicWithAssignments
	case OpCreatePartitions:
		return OpCreatePartitionsWithAssignments
	case OpUpdateResource:
		return OpUpdateTopicResolved // kiggy patches topics only
	}
	return op
}

// ReplyMatches reports whether a reply's operation byte answers a request
// of operation op: the op itself, or its committed form.
func ReplyMatches(op, replyOp uint8) bool { return replyOp == op || replyOp == CommittedOperation(op) }

// SetReplyOperation overwrites a reply header's operation byte.
func SetReplyOperation(h []byte, op uint8) { h[offReplyOperation] = op }

// Command codes (core/binary_protocol/src/codes.rs).
const (
	CodePing                 uint32 = 1
	CodeGetStats             uint32 = 10
	CodeGetClusterMetadata   uint32 = 12
	CodeBindSession          uint32 = 15 // 0.12 only
	CodeUpdateResource       uint32 = 16 // 0.12 only
	CodeGetMe                uint32 = 20
	CodeLoginUser            uint32 = 38 // legacy, rejected
	CodeLogoutUser           uint32 = 39
	CodeLoginRegister        uint32 = 40
	CodeCreatePAT            uint32 = 42
	CodeDeletePAT            uint32 = 43
	CodeLoginWithPAT         uint32 = 44 // legacy, rejected
	CodeLoginRegisterWithPAT uint32 = 45
	CodePollMessages         uint32 = 100
	CodeSendMessages         uint32 = 101
	CodeGetPartitionRoute    uint32 = 105 // 0.12 only
	CodeGetConsumerOffset    uint32 = 120
	CodeStoreConsumerOffset  uint32 = 121
	CodeDeleteConsumerOffset uint32 = 122
	CodeGetStream            uint32 = 200
	CodeGetStreams           uint32 = 201
	CodeCreateStream         uint32 = 202
	CodeDeleteStream         uint32 = 203
	CodeGetTopic             uint32 = 300
	CodeGetTopics            uint32 = 301
	CodeCreateTopic          uint32 = 302
	CodeDeleteTopic          uint32 = 303
	CodeUpdateTopic          uint32 = 304
	CodeCreatePartitions     uint32 = 402
	CodeGetConsumerGroup     uint32 = 600
	CodeGetConsumerGroups    uint32 = 601
	CodeCreateConsumerGroup  uint32 = 602
	CodeDeleteConsumerGroup  uint32 = 603
	CodeJoinConsumerGroup    uint32 = 604
	CodeLeaveConsumerGroup   uint32 = 605
	CodeSyncConsumerGroup    uint32 = 606
)

// OperationFor returns the operation byte a request with the given command
// code travels as (§1.4 table). Codes it does not know are non-replicated
// reads (operation 2, the code in the header), as the SDKs send them.
func OperationFor(code uint32) uint8 {
	switch code {
	case CodeLoginRegister, CodeLoginRegisterWithPAT:
		return OpRegister
	case CodeLogoutUser:
		return OpLogout
	case CodeCreatePAT:
		return OpCreatePAT
	case CodeDeletePAT:
		return OpDeletePAT
	case CodeCreateStream:
		return OpCreateStream
	case CodeDeleteStream:
		return OpDeleteStream
	case CodeCreateTopic:
		return OpCreateTopic
	case CodeDeleteTopic:
		return OpDeleteTopic
	case CodeUpdateTopic:
		return OpUpdateTopic
	case CodeUpdateResource:
		return OpUpdateResource
	case CodeCreatePartitions:
		return OpCreatePartitions
	case CodeCreateConsumerGroup:
		return OpCreateConsumerGroup
	case CodeDeleteConsumerGroup:
		return OpDeleteConsumerGroup
	case CodeJoinConsumerGroup:
		return OpJoinConsumerGroup
	case CodeLeaveConsumerGroup:
		return OpLeaveConsumerGroup
	case CodeSendMessages:
		return OpSendMessages
	case CodeStoreConsumerOffset:
		return OpStoreConsumerOffset
	case CodeDeleteConsumerOffset:
		return OpDeleteConsumerOffset
	}
	return OpNonReplicated
}

// ClientID is a VSR client id, a u128 sent low 8 bytes first (§1.3 offset 128).
type ClientID struct{ Lo, Hi uint64 }

// IsZero reports whether the id is 0 (invalid on the wire).
func (c ClientID) IsZero() bool { return c.Lo == 0 && c.Hi == 0 }

// RequestHeader is the decoded form of a client → server header (§1.3).
type RequestHeader struct {
	Size              uint32
	Command           uint8
	Client            ClientID
	RequestChecksum   uint64 // low 64 bits; the high 64 must be 0
	RequestChecksumHi uint64
	Request           uint64
	Operation         uint8
	Session           uint64
	Code              uint32           // legacy command code, for operation 2
	Context           PartitionContext // 0.12 only; zero in 0.11
}

// PutRequestHeader writes a request header into h[:HeaderSize], zeroing every
// other byte. bodyLen is the body length; code is written at offset 196 only
// for non-replicated requests (§1.4: "command code when operation = 2,
// otherwise 0").
func PutRequestHeader(h []byte, bodyLen int, client ClientID, request uint64, op uint8, session uint64, code uint32) {
	h = h[:HeaderSize:HeaderSize]
	clear(h)
	binary.LittleEndian.PutUint32(h[offSize:], uint32(HeaderSize+bodyLen))
	h[offCommand] = CommandRequest
	binary.LittleEndian.PutUint64(h[offClient:], client.Lo)
	binary.LittleEndian.PutUint64(h[offClient+8:], client.Hi)
	binary.LittleEndian.PutUint64(h[offRequest:], request)
	h[offOperation] = op
	binary.LittleEndian.PutUint64(h[offSession:], session)
	if op == OpNonReplicated {
		binary.LittleEndian.PutUint32(h[offCode:], code)
	}
}

// SetRequestChecksum stamps a request header's request_checksum, a u128 sent
// low half first. 0.11 (§1.3): 0 is "unstamped", otherwise XXH3-64(body)
// with hi 0. 0.12 (§9): a random non-zero identifier of the logical request,
// kept across its retries.
func SetRequestChecksum(h []byte, lo, hi uint64) {
	binary.LittleEndian.PutUint64(h[offRequestChecksum:], lo)
	binary.LittleEndian.PutUint64(h[offRequestChecksum+8:], hi)
}

// SetPartitionContext stamps a 0.12 request header's partition context
// (§9: partition_incarnation at 200, owner_generation at 208,
// minimum_metadata_op at 216). Zero in each means "not captured".
func SetPartitionContext(h []byte, c PartitionContext) {
	binary.LittleEndian.PutUint64(h[offPartitionIncarnation:], c.Incarnation)
	binary.LittleEndian.PutUint64(h[offOwnerGeneration:], c.OwnerGeneration)
	binary.LittleEndian.PutUint64(h[offMinimumMetadataOp:], c.MetadataOp)
}

// ParseRequestHeader decodes h[:HeaderSize]; h must hold at least HeaderSize bytes.
func ParseRequestHeader(h []byte) RequestHeader {
	h = h[:HeaderSize:HeaderSize]
	return RequestHeader{
		Size:              binary.LittleEndian.Uint32(h[offSize:]),
		Command:           h[offCommand],
		Client:            ClientID{binary.LittleEndian.Uint64(h[offClient:]), binary.LittleEndian.Uint64(h[offClient+8:])},
		RequestChecksum:   binary.LittleEndian.Uint64(h[offRequestChecksum:]),
		RequestChecksumHi: binary.LittleEndian.Uint64(h[offRequestChecksum+8:]),
		Request:           binary.LittleEndian.Uint64(h[offRequest:]),
		Operation:         h[offOperation],
		Session:           binary.LittleEndian.Uint64(h[offSession:]),
		Code:              binary.LittleEndian.Uint32(h[offCode:]),
		Context: PartitionContext{
			Incarnation:     binary.LittleEndian.Uint64(h[offPartitionIncarnation:]),
			OwnerGeneration: binary.LittleEndian.Uint64(h[offOwnerGeneration:]),
			MetadataOp:      binary.LittleEndian.Uint64(h[offMinimumMetadataOp:]),
		},
	}
}

// Validate applies the server's request-header checks (§1.3
// validate_request_fields). A header that fails them is dropped silently.
func (r *RequestHeader) Validate(d Dialect) bool {
	if r.Command != CommandRequest || r.Client.IsZero() || !ValidOperationIn(d, r.Operation) {
		return false
	}
	switch r.Operation {
	case OpRegister:
		// "If operation = Register (1): session must be 0 and request must be 0."
		return r.Session == 0 && r.Request == 0
	case OpNonReplicated:
		// "If operation = NonReplicated (2): no constraint on session or request."
		return true
	}
	// "Every other operation needs session > 0 and request > 0."
	return r.Session > 0 && r.Request > 0
}

// ReplyHeader is the decoded form of a server → client header: a Reply
// (§1.5) or an Eviction (§1.6), told apart by Command.
type ReplyHeader struct {
	Size      uint32
	Command   uint8
	Client    ClientID
	Op        uint64 // commit op; the session for login and non-replicated replies
	Commit    uint64
	Request   uint64
	Operation uint8
	Status    uint32
	// Eviction fields (Command == CommandEviction).
	Reason            uint8
	ServerProtocol    uint32
	ServerProtocolMin uint32
}

// ParseReplyHeader decodes h[:HeaderSize]; h must hold at least HeaderSize bytes.
func ParseReplyHeader(h []byte) ReplyHeader {
	h = h[:HeaderSize:HeaderSize]
	r := ReplyHeader{
		Size:    binary.LittleEndian.Uint32(h[offSize:]),
		Command: h[offCommand],
	}
	if r.Command == CommandEviction {
		r.Client = ClientID{binary.LittleEndian.Uint64(h[offEvictClient:]), binary.LittleEndian.Uint64(h[offEvictClient+8:])}
		r.ServerProtocol = binary.LittleEndian.Uint32(h[offEvictServerVersion:])
		r.ServerProtocolMin = binary.LittleEndian.Uint32(h[offEvictServerMin:])
		r.Reason = h[offEvictReason]
		return r
	}
	r.Client = ClientID{binary.LittleEndian.Uint64(h[offReplyClient:]), binary.LittleEndian.Uint64(h[offReplyClient+8:])}
	r.Op = binary.LittleEndian.Uint64(h[offReplyOp:])
	r.Commit = binary.LittleEndian.Uint64(h[offReplyCommit:])
	r.Request = binary.LittleEndian.Uint64(h[offReplyRequest:])
	r.Operation = h[offReplyOperation]
	r.Status = binary.LittleEndian.Uint32(h[offReplyStatus:])
	return r
}

// PutReplyHeader writes a Reply header into h[:HeaderSize], zeroing the rest.
func PutReplyHeader(h []byte, bodyLen int, req *RequestHeader, op, commit uint64, status uint32) {
	h = h[:HeaderSize:HeaderSize]
	clear(h)
	binary.LittleEndian.PutUint32(h[offSize:], uint32(HeaderSize+bodyLen))
	h[offCommand] = CommandReply
	binary.LittleEndian.PutUint64(h[offReplyRequestChecksum:], req.RequestChecksum)
	binary.LittleEndian.PutUint64(h[offReplyRequestChecksum+8:], req.RequestChecksumHi)
	binary.LittleEndian.PutUint64(h[offReplyClient:], req.Client.Lo)
	binary.LittleEndian.PutUint64(h[offReplyClient+8:], req.Client.Hi)
	binary.LittleEndian.PutUint64(h[offReplyOp:], op)
	binary.LittleEndian.PutUint64(h[offReplyCommit:], commit)
	binary.LittleEndian.PutUint64(h[offReplyRequest:], req.Request)
	h[offReplyOperation] = req.Operation
	binary.LittleEndian.PutUint32(h[offReplyStatus:], status)
}

// offReplyCommitted is 0.12's committed-result marker in a reply header
// (§9: "Byte 220 is COMMITTED_RESULT only for a final committed result").
const offReplyCommitted = 220

// SetReplyCommitted marks a 0.12 reply header as carrying a final committed
// result.
func SetReplyCommitted(h []byte) { h[offReplyCommitted] = 1 }

// PutEvictionHeader writes an Eviction frame (§1.6) into h[:HeaderSize].
// The protocol window is written only for IncompatibleProtocol.
func PutEvictionHeader(h []byte, client ClientID, reason uint8, serverVersion, serverMin uint32) {
	h = h[:HeaderSize:HeaderSize]
	clear(h)
	binary.LittleEndian.PutUint32(h[offSize:], HeaderSize)
	h[offCommand] = CommandEviction
	binary.LittleEndian.PutUint64(h[offEvictClient:], client.Lo)
	binary.LittleEndian.PutUint64(h[offEvictClient+8:], client.Hi)
	if reason == EvictIncompatibleProtocol {
		binary.LittleEndian.PutUint32(h[offEvictServerVersion:], serverVersion)
		binary.LittleEndian.PutUint32(h[offEvictServerMin:], serverMin)
	}
	h[offEvictReason] = reason
}

// FrameSize returns the total frame size announced by a header (offset 48).
func FrameSize(h []byte) uint32 { return binary.LittleEndian.Uint32(h[offSize:]) }

// FormatVersion renders a packed protocol version as "major.minor.patch".
func FormatVersion(v uint32) string {
	return itoa(v>>20) + "." + itoa(v>>10&1023) + "." + itoa(v&1023)
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

package proto

import "fmt"

// Dialect is one generation of the binary protocol: the layouts a server of
// one Iggy release reads and writes. The frame (256-byte VSR header, then
// the body) is the same in both; docs/design/iggy-protocol.md §9 lists what
// differs.
type Dialect uint8

const (
	// Dialect011 is binary protocol 0.11, Iggy 0.9.
	Dialect011 Dialect = 1
	// Dialect012 is binary protocol 0.12.0, Iggy 0.10.
	Dialect012 Dialect = 2
)

// Dialects lists the dialects kiggy speaks, newest first: the order `auto`
// tries them in.
var Dialects = [...]Dialect{Dialect012, Dialect011}

// PackVersion packs a protocol version as the login gate compares it
// (§3.3: major<<20 | minor<<10 | patch, 10 bits each).
func PackVersion(major, minor, patch uint32) uint32 {
	return major<<20 | minor<<10 | patch
}

// Version is the packed protocol version kiggy announces in this dialect's
// login. 0.12: the 0.10.0 server's gate admits exactly 0.12.0, patch
// included (iggy_binary_protocol 0.11.1-edge.4, version.rs:
// "IGGY_PROTOCOL_VERSION_MIN = pack_protocol_version(0, 12, 0)").
func (d Dialect) Version() uint32 {
	if d == Dialect012 {
		return PackVersion(0, 12, 0)
	}
	return PackVersion(0, 11, 0)
}

// Accepts reports whether a login announcing version v speaks this dialect,
// as the server of its release gates it: 0.11 servers admit any 0.11.x
// (0.11's is_protocol_compatible masks the patch), 0.12.0 servers exactly
// 0.12.0.
func (d Dialect) Accepts(v uint32) bool {
	if d == Dialect012 {
		return v == d.Version()
	}
	return v>>10 == d.Version()>>10
}

// Window is the accepted range a server of this dialect announces in an
// IncompatibleProtocol eviction (§1.6): min, max.
func (d Dialect) Window() (uint32, uint32) {
	if d == Dialect012 {
		return d.Version(), d.Version()
	}
	return d.Version(), d.Version() | 1023
}

// String names the dialect by its protocol minor version: "0.11", "0.12".
func (d Dialect) String() string {
	switch d {
	case Dialect011:
		return "0.11"
	case Dialect012:
		return "0.12"
	}
	return fmt.Sprintf("dialect(%d)", uint8(d))
}

// Release names the Iggy release line a dialect serves.
func (d Dialect) Release() string {
	if d == Dialect012 {
		return "Iggy 0.10"
	}
	return "Iggy 0.9"
}

// ParseDialect reads a dialect name as the --iggy-protocol flag takes it:
// "0.11" or "0.12".
func ParseDialect(s string) (Dialect, error) {
	switch s {
	case "0.11":
		return Dialect011, nil
	case "0.12":
		return Dialect012, nil
	}
	return 0, fmt.Errorf("iggy: unknown protocol %q (want 0.11 or 0.12)", s)
}

// DialectIn returns the newest dialect whose login version lies in the
// window [min, max] a server sent in an IncompatibleProtocol eviction.
func DialectIn(min, max uint32) (Dialect, bool) {
	for _, d := range Dialects {
		if v := d.Version(); min <= v && v <= max {
			return d, true
		}
	}
	return 0, false
}

// DialectOfLogin returns the dialect a login announcing version v speaks.
func DialectOfLogin(v uint32) (Dialect, bool) {
	for _, d := range Dialects {
		if d.Accepts(v) {
			return d, true
		}
	}
	return 0, false
}

// BindSecretSize is the length of the session-binding secret a 0.12 login
// carries after its version prefix (login_register.rs: "BIND_SECRET_BYTES:
// usize = 32").
const BindSecretSize = 32

// PollReplyHeaderSize is the fixed head of a PollMessages reply before its
// batches: [partition u32][current_offset u64][count u32], and in 0.12 the
// 24-byte partition context (§9).
func (d Dialect) PollReplyHeaderSize() int {
	if d == Dialect012 {
		return 16 + PartitionContextSize
	}
	return 16
}

// PartitionRecordSize is the size of one PartitionResponse in a
// GetTopic/CreateTopic reply: 40 bytes, 64 in 0.12 (the partition context).
func (d Dialect) PartitionRecordSize() int {
	if d == Dialect012 {
		return 40 + PartitionContextSize
	}
	return 40
}

// TopicHeaderMin is the smallest TopicHeader: its fixed fields, a 1-byte
// name and two empty option blocks (0.11: 50 fixed bytes; 0.12: 33, the
// message expiry, compression and size cap having moved to the options).
func (d Dialect) TopicHeaderMin() int {
	if d == Dialect012 {
		return 33 + 1 + 8
	}
	return 50 + 1 + 8
}

// PartitionContextSize is the size of a 0.12 PartitionContext: incarnation,
// owner generation and metadata op, u64 each (partition_history.rs:
// "ENCODED_SIZE: usize = 3 * size_of::<u64>()").
const PartitionContextSize = 24

// PartitionContext is a partition's identity in 0.12: the metadata revision
// that created it (which changes when its numeric id is reused), the
// consumer-group owner generation, and the metadata op it was read at.
type PartitionContext struct {
	Incarnation, OwnerGeneration, MetadataOp uint64
}

// ReadPartitionContext reads a PartitionContext.
func (r *Reader) ReadPartitionContext() PartitionContext {
	return PartitionContext{Incarnation: r.U64(), OwnerGeneration: r.U64(), MetadataOp: r.U64()}
}

// AppendPartitionContext appends a PartitionContext.
func AppendPartitionContext(dst []byte, c PartitionContext) []byte {
	dst = AppendU64(dst, c.Incarnation)
	dst = AppendU64(dst, c.OwnerGeneration)
	return AppendU64(dst, c.MetadataOp)
}

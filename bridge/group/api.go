package group

import "time"

// Protocol is one protocol (assignor) a joining member supports, with its
// opaque metadata (for consumers a ConsumerProtocolSubscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a decoded JoinGroup request. Its strings and slices may
// alias a request buffer; Join copies what it keeps.
type JoinRequest struct {
	// GroupID is the group to join; "" gets INVALID_GROUP_ID (24).
	GroupID string
	// MemberID is "" on a first join, else the id the coordinator gave.
	MemberID string
	// GroupInstanceID is the static member id (JoinGroup v5+, KIP-345),
	// meaningful when HasInstanceID.
	GroupInstanceID string
	HasInstanceID   bool
	// ClientID and ClientHost are reported by Describe.
	ClientID, ClientHost string
	// ProtocolType is the member's protocol type, "consumer" for consumers.
	ProtocolType string
	// Protocols are the member's protocols in preference order.
	Protocols []Protocol
	// SessionTimeout must lie within [MinSessionTimeout, MaxSessionTimeout].
	SessionTimeout time.Duration
	// RebalanceTimeout is how long a rebalance may wait for this member;
	// zero or negative (JoinGroup v0) means SessionTimeout, as in Kafka.
	RebalanceTimeout time.Duration
	// RequireKnownMemberID is set for JoinGroup v4+: a first join gets
	// MEMBER_ID_REQUIRED (79) carrying a new id to rejoin with (KIP-394).
	RequireKnownMemberID bool
	// SupportsSkipAssignment is set for JoinGroup v9+ (KIP-814): a static
	// leader that rejoins a stable group is told it leads, with the member
	// list and SkipAssignment, instead of being handed the old leader's id.
	SupportsSkipAssignment bool
	// Reason is the client's reason (v8+); informational only.
	Reason string
}

// Member is one group member as sent to the leader in a JoinGroup response.
type Member struct {
	MemberID        string
	GroupInstanceID string
	HasInstanceID   bool
	// Metadata is the member's metadata for the chosen protocol.
	Metadata []byte
}

// JoinResult is the outcome of a Join. Strings and slices are
// coordinator-owned and never mutated; an empty ProtocolType or ProtocolName
// stands for null on the wire (error responses).
type JoinResult struct {
	Error        int16
	GenerationID int32 // -1 on error
	ProtocolType string
	ProtocolName string
	LeaderID     string
	MemberID     string
	// Members is set for the leader only.
	Members []Member
	// SkipAssignment tells a static leader not to run the assignor (v9+).
	SkipAssignment bool
}

// Assignment is the leader's assignment for one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncRequest is a decoded SyncGroup request. Its strings and slices may
// alias a request buffer; Sync copies what it keeps.
type SyncRequest struct {
	GroupID         string
	GenerationID    int32
	MemberID        string
	GroupInstanceID string
	HasInstanceID   bool
	// ProtocolType and ProtocolName are checked against the group's when
	// present (SyncGroup v5+, KIP-559).
	ProtocolType, ProtocolName       string
	HasProtocolType, HasProtocolName bool
	// Assignments is filled by the leader only.
	Assignments []Assignment
}

// SyncResult is the outcome of a Sync. Strings and slices are
// coordinator-owned and never mutated; ProtocolType and ProtocolName are
// empty (null on the wire) on error.
type SyncResult struct {
	Error        int16
	ProtocolType string
	ProtocolName string
	Assignment   []byte
}

// LeaveMember identifies one member leaving: by member id, or by instance id
// alone (MemberID "") for an administrative removal of a static member.
type LeaveMember struct {
	MemberID        string
	GroupInstanceID string
	HasInstanceID   bool
	Reason          string
}

// GroupDescription describes a group for DescribeGroups. Strings and slices
// are coordinator-owned copies.
type GroupDescription struct {
	// Error is 0, or COORDINATOR_NOT_AVAILABLE (15) after Close.
	Error   int16
	GroupID string
	// State is "Empty", "PreparingRebalance", "CompletingRebalance",
	// "Stable" or "Dead" (unknown group).
	State        string
	ProtocolType string
	// Protocol is the chosen protocol; set only when Stable, as in Kafka.
	Protocol string
	Members  []MemberDescription
}

// MemberDescription describes one member. Metadata and Assignment are set
// only when the group is Stable, as in Kafka.
type MemberDescription struct {
	MemberID             string
	GroupInstanceID      string
	HasInstanceID        bool
	ClientID, ClientHost string
	Metadata, Assignment []byte
}

// GroupListing is one group in ListGroups.
type GroupListing struct {
	GroupID, ProtocolType, State string
	// Type is "classic" or "consumer" (ListGroups v5+, KIP-848).
	Type string
}

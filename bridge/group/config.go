package group

import "time"

// Defaults applied by New to zero Config fields; they are Kafka's broker
// defaults for the classic group coordinator.
const (
	// DefaultMinSessionTimeout is Kafka's group.min.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
	// DefaultMaxSessionTimeout is Kafka's group.max.session.timeout.ms.
	DefaultMaxSessionTimeout = 30 * time.Minute
	// DefaultInitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms.
	DefaultInitialRebalanceDelay = 3 * time.Second
)

// newMemberJoinTimeout bounds how long a member that has never completed a
// join may wait in a rebalance (Kafka's GroupCoordinator.NewMemberJoinTimeoutMs):
// such a member cannot heartbeat yet, and a client that gave up and retried
// with a fresh id would otherwise leave a defunct member behind forever.
const newMemberJoinTimeout = 5 * time.Minute

// Config configures a Coordinator. Its zero value means Kafka's defaults.
type Config struct {
	// MinSessionTimeout is the smallest session timeout a member may ask for;
	// JoinGroup below it gets INVALID_SESSION_TIMEOUT (26).
	// 0 means 6 s. Kafka: group.min.session.timeout.ms.
	MinSessionTimeout time.Duration

	// MaxSessionTimeout is the largest session timeout a member may ask for;
	// JoinGroup above it gets INVALID_SESSION_TIMEOUT (26).
	// 0 means 30 min; raised to MinSessionTimeout if below it.
	// Kafka: group.max.session.timeout.ms.
	MaxSessionTimeout time.Duration

	// InitialRebalanceDelay is how long the first rebalance of an empty group
	// waits for more members, extended by the same delay while new members
	// keep arriving, up to the group's rebalance timeout (KIP-134).
	// 0 means 3 s; negative means no delay. Kafka: group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration

	// MaxGroupSize caps the members of one group; joins beyond it get
	// GROUP_MAX_SIZE_REACHED (81). 0 or negative means unlimited.
	// Kafka: group.max.size (KIP-389).
	MaxGroupSize int

	// ConsumerSessionTimeout is group.consumer.session.timeout.ms: a
	// consumer-protocol member that does not heartbeat for it is fenced
	// (zero: Kafka's 45 s).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms,
	// told to consumer-protocol members (zero: Kafka's 5 s).
	ConsumerHeartbeatInterval time.Duration
	// DefaultAssignor is the server assignor ("uniform" or "range") of a
	// consumer-protocol group whose members do not name one: Kafka's first
	// of group.consumer.assignors (empty: uniform).
	DefaultAssignor string
	// ConsumerGroupChanged, when set, gets a value (without blocking)
	// whenever a consumer-protocol group changes; the owner then calls
	// DirtyConsumerGroups and stores what it returns.
	ConsumerGroupChanged chan struct{}
	// AwaitStore holds answers that tell a member of a change until the
	// owner reports the change stored: a classic group's JoinGroup and
	// SyncGroup answers while a stored form of the group is queued or being
	// written (ClassicGroupsStored), and a consumer-protocol heartbeat's
	// while its group has an unstored change (ConsumerHeartbeatResult's
	// StoreSeq, AfterConsumerStored, ConsumerGroupsStored). A member told
	// of a generation or an epoch finds it after a restart or a coordinator
	// move, as Kafka answers once the group's records are appended. Unset,
	// answers go at once and the stored form follows.
	AwaitStore bool
	// Topics, when set, returns the topic metadata classic members of a
	// consumer group are assigned from (migration.go); consumer-protocol
	// heartbeats bring their own.
	Topics func() TopicLookup

	// MaxMembers caps the members and pending member ids (MEMBER_ID_REQUIRED)
	// of all groups together; a new member past it gets
	// COORDINATOR_NOT_AVAILABLE (15). 0 or negative means unlimited. No
	// Kafka equivalent (limits.go).
	MaxMembers int

	// MaxGroups caps the groups held; a join or simple commit that would
	// create one past it evicts an empty group without committed offsets,
	// or gets COORDINATOR_NOT_AVAILABLE (15) when it finds none. 0 or
	// negative means unlimited. No Kafka equivalent (limits.go).
	MaxGroups int

	// Now reads the current time; nil means time.Now. It only reads the
	// clock: timers still wait in real time, then compare deadlines with Now.
	Now func() time.Time
}

// normalized returns cfg with defaults applied and bounds enforced.
func (cfg Config) normalized() Config {
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if cfg.MaxSessionTimeout < cfg.MinSessionTimeout {
		cfg.MaxSessionTimeout = cfg.MinSessionTimeout
	}
	switch {
	case cfg.InitialRebalanceDelay == 0:
		cfg.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	case cfg.InitialRebalanceDelay < 0:
		cfg.InitialRebalanceDelay = 0
	}
	cfg.MaxGroupSize = max(cfg.MaxGroupSize, 0)
	cfg.MaxMembers = max(cfg.MaxMembers, 0)
	cfg.MaxGroups = max(cfg.MaxGroups, 0)
	return cfg
}

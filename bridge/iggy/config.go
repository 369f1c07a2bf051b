package iggy

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"runtime"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// Config configures a Client. The zero value means "defaults" for every
// field except Addr; Open normalizes and validates it once.
type Config struct {
	// Addr is the Iggy server's TCP address, host:port (default
	// "127.0.0.1:8090", the iggy-server default).
	Addr string
	// Username and Password log in with LoginRegister (§3.3). Default
	// "iggy"/"iggy" unless Token is set. SDK limits: 3–50 / 3–100 bytes.
	Username, Password string
	// Token, if set, logs in with a personal access token instead
	// (LoginRegisterWithPat) and Username/Password are ignored. At most 255
	// bytes.
	Token string
	// Stream is the Iggy stream holding every Kafka topic (default "kafka",
	// docs/design/record-mapping.md §4). 1–200 bytes, so that a SendMessages prologue
	// always fits message.Headroom.
	Stream string
	// PoolSize is the number of sessions (TCP connections, one request in
	// flight each). Default DefaultPoolSize or 4 × GOMAXPROCS, whichever is
	// more; at most 1024; see docs/IGGY.md, "Sessions", on sizing it.
	PoolSize int
	// RequestTimeout bounds one request from write to reply; on expiry the
	// connection is dropped, as a late reply would desynchronise it (§1.8).
	// Default 30 s, as the SDKs.
	RequestTimeout time.Duration
	// DialTimeout bounds connecting and logging in. Default 5 s.
	DialTimeout time.Duration
	// PasswordLogins makes every session log in with Username and Password.
	// By default the client logs its first session in with them, creates a
	// personal access token and logs the others in with it: iggy-server
	// checks a password against an Argon2 hash (~18 ms of its CPU) and a
	// token against a SHA-256 (docs/IGGY.md, "Sessions").
	PasswordLogins bool
	// PingInterval is how long a session may sit idle before a keep-alive
	// Ping (the SDKs ping every 5 s). Default 5 s; negative disables pings.
	PingInterval time.Duration
	// ReconnectBackoffMin and ReconnectBackoffMax bound the wait between a
	// session's failed connection attempts (doubling). Default 100 ms and 2 s.
	ReconnectBackoffMin, ReconnectBackoffMax time.Duration
	// TLS, when set, connects with TLS (the server's TCP TLS listener,
	// docs/IGGY.md "TLS"): RootCAs verify the server (nil = the system's
	// roots), Certificates answer a server that asks for a client
	// certificate, ServerName overrides the name checked (default: the host
	// of the address dialled).
	TLS *tls.Config
	// SystemStream is the reserved Iggy stream holding kiggy's own state,
	// the commit log among it (default "__kiggy"; docs/IGGY.md "Committed
	// offsets"). It is never shown to Kafka clients and must differ from
	// Stream.
	SystemStream string
	// CommitTail, when positive, is how often the client reads the commit
	// log for commits other kiggy instances made (several instances over
	// one stream, docs/design/cluster.md §9); 0 = never (one instance: the
	// log is read at Open only, and compacted as it grows while no other
	// instance writes it, compactor.go). With it the tail reader compacts
	// the commit log, with a switch the other instances follow.
	CommitTail time.Duration
	// system marks the client of the system stream itself; noCommitLog
	// (tests against fake servers) opens no commit log either.
	system, noCommitLog bool
	// sharedTokens is the session token of the client whose system stream
	// this client serves: it logs in with it and never mints its own.
	sharedTokens *sessionTokens
	// tokenLifetime is a minted session token's expiry; 0 =
	// sessionTokenLifetime. Tests shorten it.
	tokenLifetime time.Duration
	// compactMin and compactRatio are the commit log's and the system
	// store's compaction thresholds (worthCompacting); 0 = the defaults.
	// Tests lower them; the system stream's client inherits them.
	compactMin, compactRatio int
	// noCompactor keeps a lone instance from compacting while it runs
	// (compactor.go), for tests of the compaction at open.
	noCompactor bool
	// stateTakeover is how long a system store write waits for another
	// instance's copy into a new generation; 0 = stateTakeoverAfter.
	// Tests shorten it.
	stateTakeover time.Duration
	// beforeStateAppend, when set, runs before each system store append
	// (tests: another instance's switch landing just then).
	beforeStateAppend func(topic string)
	// Durability is when the server must confirm a write to a topic kiggy
	// creates (docs/IGGY.md, "Durability"): store.DurabilityWritten (the
	// default: written to the segment file before the reply),
	// store.DurabilityFsync (and fsynced), or store.DurabilityBuffered
	// (Iggy's own defaults: confirmed from its in-memory journal, lost if
	// iggy-server crashes).
	Durability store.Durability
	// ReadCacheBytes bounds the read cache (docs/IGGY.md, "Reads"): chunks
	// of recent PollMessages replies served to later Reads, and polled ahead
	// of sequential readers. 0 = DefaultReadCacheBytes; negative disables
	// the cache and read-ahead.
	ReadCacheBytes int64
	// FetchCacheBytes bounds the encoded Kafka record batches the gateway
	// keeps to answer later Fetches of the same reads (other consumer
	// groups) without mapping the messages again (docs/IGGY.md, "Fetches
	// share encoded batches"); it needs the read cache. 0 =
	// DefaultFetchCacheBytes; negative disables it.
	FetchCacheBytes int64
	// TailWindowBytes bounds the tail window (docs/IGGY.md, "The tail
	// window"): the frames of this client's confirmed appends, kept so
	// that readers at the tail are served without a poll; it needs the
	// read cache. 0 = DefaultTailWindowBytes; negative disables it.
	TailWindowBytes int64
	// SoleWriter declares that nothing but this client appends to the
	// stream's topics (no Iggy-native producer, no other kiggy instance):
	// a Read at a high watermark the client knows exactly is then answered
	// without a poll, and the gateway parks a Fetch at the tail until an
	// append through it (store.Capabilities.SoleWriter) instead of
	// polling every 100 ms. Records another writer appends anyway are
	// seen only after this client's next append to the partition, a poll
	// of it, or a reconnect.
	SoleWriter bool
	// Protocol is the binary protocol dialect spoken (docs/IGGY.md,
	// "Versions"): 0 = auto (the newest first; an IncompatibleProtocol
	// eviction's window names the one the server takes), or
	// proto.Dialect011 (Iggy 0.9) or proto.Dialect012 (Iggy 0.10) only.
	Protocol proto.Dialect
	// WaitSessions is how many readiness waits (WaitForAppend, protocol
	// 0.12 only) may be parked at once, each on a session of its own
	// outside the pool, so that parked Fetches never hold a session a
	// Produce waits for (docs/IGGY.md, "Waiting for appends"). They connect
	// on first use. 0 = PoolSize; negative = none (WaitForAppend then
	// answers store.ErrUnsupported); at most 1024.
	WaitSessions int
	// ReadSessions is how many of the pool's sessions reads of records
	// (polls) may hold at once; the others are kept for appends, offset
	// commits and metadata, so that a Fetch of many partitions never makes
	// a Produce or an OffsetCommit wait for a session behind its polls
	// (docs/IGGY.md, "Sessions"). A routed node's pool keeps the same
	// share. 0 = PoolSize − PoolSize/4 (24 of 32); more than PoolSize =
	// PoolSize (reads may hold every session, as before the share).
	ReadSessions int
	// Logger receives connection events (default: slog.Default()).
	Logger *slog.Logger
}

// DefaultPoolSize is the least default PoolSize. A session is held for a
// request's whole round trip, so the sessions a load needs are its Iggy
// requests a second times their latency (Little's law), not a number per
// CPU: with 16 partitions written at 120k records/s on two CPUs kiggy sends
// about 4,300 SendMessages a second of 1.2–1.4 ms, 5–6 sessions busy on
// average and more in bursts, and a pool of 8 (4 × GOMAXPROCS there) made
// one request in seven wait for a free session (docs/BENCHMARKS.md, "Iggy
// sessions"). An idle session costs a connection and a ping every
// PingInterval; after an iggy-server restart it is found closed before use
// and connected again (stale.go), so a larger pool costs no failed requests.
const DefaultPoolSize = 32

// Limits of Config fields.
const (
	maxPoolSize   = 1024
	maxStreamName = 200
	maxNameLen    = 255
)

// normalize fills defaults.
func (c *Config) normalize() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8090"
	}
	if c.Token == "" {
		if c.Username == "" {
			c.Username = "iggy"
		}
		if c.Password == "" {
			c.Password = "iggy"
		}
	}
	if c.Stream == "" {
		c.Stream = "kafka"
	}
	if c.SystemStream == "" {
		c.SystemStream = DefaultSystemStream
	}
	if c.PoolSize == 0 {
		c.PoolSize = min(max(DefaultPoolSize, 4*runtime.GOMAXPROCS(0)), maxPoolSize)
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.compactMin == 0 {
		c.compactMin = defaultCompactMin
	}
	if c.compactRatio == 0 {
		c.compactRatio = defaultCompactRatio
	}
	if c.PingInterval == 0 {
		c.PingInterval = 5 * time.Second
	}
	if c.tokenLifetime == 0 {
		c.tokenLifetime = sessionTokenLifetime
	}
	if c.ReconnectBackoffMin == 0 {
		c.ReconnectBackoffMin = 100 * time.Millisecond
	}
	if c.ReconnectBackoffMax == 0 {
		c.ReconnectBackoffMax = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadCacheBytes == 0 {
		c.ReadCacheBytes = DefaultReadCacheBytes
	}
	if c.FetchCacheBytes == 0 {
		c.FetchCacheBytes = DefaultFetchCacheBytes
	}
	if c.TailWindowBytes == 0 {
		c.TailWindowBytes = DefaultTailWindowBytes
	}
	if c.Durability == store.DurabilityDefault {
		c.Durability = store.DurabilityWritten
	}
	if c.WaitSessions == 0 {
		c.WaitSessions = c.PoolSize
	}
	if c.ReadSessions == 0 {
		c.ReadSessions = readShare(c.PoolSize)
	}
	c.ReadSessions = min(c.ReadSessions, c.PoolSize)
}

// readShare is the default ReadSessions of a pool of n sessions: three
// quarters, at least one.
func readShare(n int) int { return max(n-n/4, 1) }

// validate checks the normalized config.
func (c *Config) validate() error {
	switch {
	case len(c.Stream) > maxStreamName:
		return errors.New("iggy: config: Stream longer than 200 bytes")
	case len(c.SystemStream) > maxStreamName:
		return errors.New("iggy: config: SystemStream longer than 200 bytes")
	case !c.system && c.SystemStream == c.Stream:
		return errors.New("iggy: config: SystemStream must differ from Stream")
	case c.Token == "" && (len(c.Username) > maxNameLen || len(c.Password) > maxNameLen):
		return errors.New("iggy: config: Username or Password longer than 255 bytes")
	case len(c.Token) > maxNameLen:
		return errors.New("iggy: config: Token longer than 255 bytes")
	case c.PoolSize < 1 || c.PoolSize > maxPoolSize:
		return errors.New("iggy: config: PoolSize must be 1..1024")
	case c.ReadSessions < 1:
		return errors.New("iggy: config: ReadSessions must be at least 1 (0 = the default share)")
	case c.WaitSessions > maxPoolSize:
		return errors.New("iggy: config: WaitSessions must be at most 1024")
	case c.RequestTimeout < 0 || c.DialTimeout < 0:
		return errors.New("iggy: config: negative timeout")
	case c.Durability != store.DurabilityWritten && c.Durability != store.DurabilityFsync && c.Durability != store.DurabilityBuffered:
		return errors.New("iggy: config: Durability must be written, fsync or buffered")
	case c.Protocol != 0 && c.Protocol != proto.Dialect011 && c.Protocol != proto.Dialect012:
		return errors.New("iggy: config: Protocol must be 0 (auto), proto.Dialect011 or proto.Dialect012")
	case c.ReconnectBackoffMin < 0 || c.ReconnectBackoffMax < c.ReconnectBackoffMin:
		return errors.New("iggy: config: ReconnectBackoffMax must be ≥ ReconnectBackoffMin ≥ 0")
	}
	return nil
}

// Package bridge gives Kafka semantics to a log: one handler per Kafka API
// (ApiVersions, Metadata, Produce, Fetch, groups, admin), the record ⇄
// message mapping (bridge/mapping), producer-id allocation and the group
// coordinator. It talks to storage only through the port in bridge/store
// (store.Log and its optional interfaces).
//
// Execution model. The engine calls Gateway.Serve on an event loop, one call
// at a time per connection. Requests of one connection are processed one
// after another, in arrival order, like a Kafka broker that mutes a socket
// while it serves a request: this keeps a producer's batches to a partition
// in order across pipelined requests. A request is handled inline on the
// loop when the backend declares Capabilities.NonBlocking (the embedded log)
// and the request is small; otherwise on a pool of worker goroutines. A request that has to
// wait (a long-polling Fetch, a JoinGroup waiting for its generation) parks
// without holding a loop or a worker, and the connection's next request
// runs when it completes.
package bridge

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/fetchcache"
	"github.com/kiggy-io/kiggy/bridge/fetchsession"
	"github.com/kiggy-io/kiggy/quota"
	"github.com/kiggy-io/kiggy/security"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/bridge/txn"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/wire"
)

// Defaults applied by Config when a field is zero (the engine's are in
// engine/config.go; cmd/kiggy's flags start from both).
const (
	// DefaultNodeID is the broker id in Metadata.
	DefaultNodeID = 1
	// DefaultClusterID is the cluster id in Metadata.
	DefaultClusterID = "kiggy"
	// DefaultNumPartitions is the partition count of auto-created topics
	// (Kafka num.partitions).
	DefaultNumPartitions = 1
	// DefaultDecodeBudgetRecords bounds the records one Produce request may
	// decode.
	DefaultDecodeBudgetRecords = 4_000_000
	// DefaultWorkers is the number of goroutines serving requests that may
	// block on the backend.
	DefaultWorkers = 256
	// DefaultProduceTimeoutCap caps a Produce request's timeout_ms.
	DefaultProduceTimeoutCap = 20 * time.Second
)

// Config configures a Gateway. The zero value means defaults.
type Config struct {
	// NodeID is this gateway's broker id in Metadata; 0 = 1.
	NodeID int32
	// AdvertisedHost and AdvertisedPort are the address clients are told to
	// connect to. Empty/0 = the local address of the connection the request
	// arrived on (right for a single gateway on a directly reachable port).
	AdvertisedHost string
	AdvertisedPort int32
	// Listeners maps a listener name (engine.ConnInfo.Listener) to its
	// security protocol; a listener not in it is PLAINTEXT
	// (docs/design/security.md §3).
	Listeners map[string]security.Protocol
	// AdvertisedListeners is the address told to clients of each listener
	// (Kafka advertised.listeners), by listener name; it wins over
	// AdvertisedHost/AdvertisedPort for that listener's connections, and an
	// empty host or zero port in it is the one the client reached
	// (docs/design/security.md §4).
	AdvertisedListeners map[string]AdvertisedAddr
	// CertPrincipal, when set, maps the TLS state of a connection on an SSL
	// listener to its principal (tlsconf.Server.Principal); it is called
	// once, at the connection's first request (docs/design/security.md §5).
	CertPrincipal func(*tls.ConnectionState) security.Principal
	// ClusterID is returned in Metadata; "" = "kiggy".
	ClusterID string
	// NoAutoCreateTopics turns off Metadata auto-creation (Kafka
	// auto.create.topics.enable=false). Produce never creates topics.
	NoAutoCreateTopics bool
	// AutoCreateTopicsLimit stops Metadata auto-creation while the log
	// holds this many topics (creationlimits.go); 0 = 10,000, negative = no
	// cap. No Kafka equivalent.
	AutoCreateTopicsLimit int
	// DefaultPartitions is the partition count of auto-created topics and of
	// CreateTopics with -1; 0 = 1 (Kafka num.partitions).
	DefaultPartitions int32
	// InstanceID goes into the high bits of allocated producer ids
	// (docs/design/record-mapping.md §6).
	InstanceID uint16
	// MaxFrameSize is the engine's frame limit, used to derive the decode
	// budget; 0 = 100 MiB.
	MaxFrameSize int32
	// DecodeBudgetBytes bounds the decompressed record bytes one Produce
	// request may decode; 0 = 2 × MaxFrameSize.
	DecodeBudgetBytes int64
	// DecodeBudgetRecords bounds the records one Produce request may
	// decode; 0 = 4,000,000.
	DecodeBudgetRecords int64
	// MaxConcurrentDecodes bounds compressed batches decoded at once; 0 =
	// 2 × GOMAXPROCS.
	MaxConcurrentDecodes int
	// Workers is the number of goroutines serving requests that may block
	// on the backend; 0 = 256.
	Workers int
	// WorkQueueLen is the capacity of the workers' queue; a request that
	// finds it full runs on a goroutine of its own. 0 = 4096; negative =
	// no queue (every such request on a goroutine of its own).
	WorkQueueLen int
	// StateRefresh is how often a gateway on a shared system store (other
	// gateways on the same Iggy) asks it whether another gateway changed
	// ACLs, SCRAM credentials, client quotas, topic configs or log starts,
	// and reads those that changed, so that such a change applies here
	// within it (sharedstate.go); 0 = DefaultStateRefresh (1 s).
	StateRefresh time.Duration
	// ProduceTimeoutCap caps a Produce request's timeout_ms; 0 = 20 s.
	ProduceTimeoutCap time.Duration
	// ProducerStateScan is how many messages of a partition's tail the
	// first idempotent append after start reads back to rebuild the
	// partition's producer window (docs/MAPPING.md "Producer stamp"); a
	// batch stamped further back is no longer detected as a duplicate.
	// 0 = 16384.
	ProducerStateScan int
	// ProducerIDExpiration is how long an idle producer's sequence state is
	// kept (Kafka producer.id.expiration.ms); 0 = 24 h.
	ProducerIDExpiration time.Duration
	// TransactionMaxTimeout is the longest transaction.timeout.ms a
	// transactional producer may ask for (Kafka
	// transaction.max.timeout.ms); 0 = 15 min.
	TransactionMaxTimeout time.Duration
	// TransactionalIDExpiration is how long a transactional id with no
	// transaction open is remembered (Kafka
	// transactional.id.expiration.ms); 0 = 7 days.
	TransactionalIDExpiration time.Duration
	// MaxTransactionalIDs caps the transactional ids the coordinator
	// holds; InitProducerId for a new one past it gets
	// COORDINATOR_NOT_AVAILABLE (txn.Config.MaxIDs). 0 = 100,000;
	// negative = no cap. No Kafka equivalent.
	MaxTransactionalIDs int
	// MaxPartitions caps the partitions the log holds: a CreateTopics or
	// CreatePartitions past it gets POLICY_VIOLATION, a Metadata
	// auto-creation UNKNOWN_TOPIC_OR_PARTITION (creationlimits.go). 0 =
	// 100,000; negative = no cap. Kafka has none (KIP-578's max.partitions
	// was not adopted).
	MaxPartitions int
	// MaxACLs caps the ACLs CreateAcls may store; a new one past it gets
	// POLICY_VIOLATION (adminlimits.go). 0 = 100,000; negative = no cap.
	MaxACLs int
	// MaxScramCredentials caps the SCRAM credentials (user × mechanism)
	// AlterUserScramCredentials may store; a new one past it gets
	// POLICY_VIOLATION. 0 = 100,000; negative = no cap.
	MaxScramCredentials int
	// MaxClientQuotaEntities caps the entities AlterClientQuotas may store
	// quotas of; a new one past it gets POLICY_VIOLATION (adminlimits.go);
	// 0 = DefaultMaxClientQuotaEntities, negative = no cap.
	MaxClientQuotaEntities int
	// RefuseUnissuedProducerIDs refuses, with UNKNOWN_PRODUCER_ID, an
	// idempotent batch that would create a producer state for an id
	// InitProducerId never handed out (producer.IDs.Issued;
	// docs/LIMITS.md "Idempotent producers"). Off in the zero value, as
	// tests send hand-made ids; cmd/kiggy turns it on by default.
	RefuseUnissuedProducerIDs bool
	// MaxProducerStates caps the idempotent producer states (one per
	// producer id and partition) held in total; a new one past it is
	// refused with THROTTLING_QUOTA_EXCEEDED (producer.Limits). 0 =
	// 1,000,000; negative = no cap. No Kafka equivalent (KIP-936 is under
	// discussion).
	MaxProducerStates int64
	// MaxProducerStatesPerPrincipal caps the states one principal's
	// batches created; 0 = 100,000; negative = no cap.
	MaxProducerStatesPerPrincipal int64
	// ReclaimMemory, when set, is the process's memory policy: the
	// janitor calls it every 2 s with how long no request has arrived (0
	// while they do) and whether a Produce decoded unusually much (a
	// compression bomb at the budget) since the last call. The library sets
	// no GC policy of its own; cmd/kiggy passes one that returns memory to
	// the OS after bursts (docs/design/architecture.md §4).
	ReclaimMemory func(idle time.Duration, bigDecode bool)
	// SASL configures authentication on SASL listeners (bridge/sasl.go).
	SASL SASLConfig
	// Authorization turns on ACLs (acl.go; docs/design/security.md §6).
	Authorization AuthorizationConfig
	// Placement spreads partitions and groups over several instances
	// (bridge/cluster, docs/design/cluster.md); nil = this instance alone
	// serves everything.
	Placement store.Placement
	// Peers sends requests to the other instances of a cluster
	// (txncluster.go): needed for transactions in a cluster, which are
	// refused without it.
	Peers Peers
	// FetchSessionCacheSlots is how many incremental Fetch sessions
	// (KIP-227, bridge/fetchsession) the gateway holds (Kafka
	// max.incremental.fetch.session.cache.slots); 0 = 1,000; negative =
	// none, every Fetch answered sessionless
	// (docs/design/kafka-protocol.md §7.4).
	FetchSessionCacheSlots int
	// FetchSessionMaxPartitions caps the partitions all fetch sessions
	// hold (about 200 bytes each); a full Fetch that would pass it gets no
	// session, an incremental one that would closes its session. 0 =
	// 1,000,000. No Kafka equivalent.
	FetchSessionMaxPartitions int
	// FetchSessionMinEviction is how long a session must go unused before
	// any new session may evict it, and how old it must be before a
	// larger one may (Kafka min.incremental.fetch.session.eviction.ms);
	// 0 = 120 s.
	FetchSessionMinEviction time.Duration
	// Quota sets the client request quota (Kafka's request_percentage,
	// KIP-124; quotas.go): the gateway time each (user, client id) may use,
	// as a percentage of one thread; a client over it is throttled. The
	// zero value sets none (Kafka's default too).
	Quota quota.Config
	// ControllerMutationRate is the controller mutation quota of every
	// client (Kafka's controller_mutation_rate of the default user and
	// client id, KIP-599; quotas.go): the partitions it may create or
	// delete a second, measured over Quota's window (0 = none, Kafka's
	// default too).
	ControllerMutationRate float64
	// ProducerByteRate and ConsumerByteRate are every client's byte-rate
	// quotas (Kafka's producer_byte_rate and consumer_byte_rate of the
	// default user and client id; quotas.go): the Produce request bytes
	// and the Fetch record bytes it may move a second, measured over
	// Quota's window (0 = none, Kafka's default too).
	ProducerByteRate, ConsumerByteRate int64
	// ConnectionCreationRatePerIP is the engine's per-IP connection
	// creation rate (engine.Config; NewServer copies it), described by
	// DescribeClientQuotas as the default IP entity's
	// connection_creation_rate.
	ConnectionCreationRatePerIP int
	// Group configures the group coordinator (session timeout bounds,
	// initial rebalance delay).
	Group group.Config
	// Logger receives warnings; nil = discard.
	Logger *slog.Logger
}

func (c *Config) normalize() {
	if c.NodeID == 0 {
		c.NodeID = DefaultNodeID
	}
	if c.ClusterID == "" {
		c.ClusterID = DefaultClusterID
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = DefaultNumPartitions
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = engine.DefaultMaxFrameSize
	}
	if c.DecodeBudgetBytes <= 0 {
		c.DecodeBudgetBytes = 2 * int64(c.MaxFrameSize)
	}
	if c.DecodeBudgetRecords <= 0 {
		c.DecodeBudgetRecords = DefaultDecodeBudgetRecords
	}
	if c.MaxConcurrentDecodes <= 0 {
		c.MaxConcurrentDecodes = 2 * gomaxprocs()
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.ProduceTimeoutCap <= 0 {
		c.ProduceTimeoutCap = DefaultProduceTimeoutCap
	}
	if c.MaxACLs == 0 {
		c.MaxACLs = DefaultMaxACLs
	}
	if c.MaxScramCredentials == 0 {
		c.MaxScramCredentials = DefaultMaxScramCredentials
	}
	if c.MaxClientQuotaEntities == 0 {
		c.MaxClientQuotaEntities = DefaultMaxClientQuotaEntities
	}
	if c.MaxTransactionalIDs == 0 {
		c.MaxTransactionalIDs = DefaultMaxTransactionalIDs
	}
	if c.MaxPartitions == 0 {
		c.MaxPartitions = DefaultMaxPartitions
	}
	if c.AutoCreateTopicsLimit == 0 {
		c.AutoCreateTopicsLimit = DefaultAutoCreateTopicsLimit
	}
	if c.ProducerStateScan <= 0 {
		c.ProducerStateScan = 16384
	}
	if c.ProducerIDExpiration <= 0 {
		c.ProducerIDExpiration = 24 * time.Hour
	}
	if c.MaxProducerStates == 0 {
		c.MaxProducerStates = DefaultMaxProducerStates
	}
	if c.MaxProducerStatesPerPrincipal == 0 {
		c.MaxProducerStatesPerPrincipal = DefaultMaxProducerStatesPerPrincipal
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.WorkQueueLen == 0 {
		c.WorkQueueLen = 4096
	}
	if c.StateRefresh <= 0 {
		c.StateRefresh = DefaultStateRefresh
	}
	if c.FetchSessionCacheSlots == 0 {
		c.FetchSessionCacheSlots = fetchsession.DefaultSlots
	}
	if c.FetchSessionMaxPartitions <= 0 {
		c.FetchSessionMaxPartitions = fetchsession.DefaultMaxPartitions
	}
	if c.FetchSessionMinEviction <= 0 {
		c.FetchSessionMinEviction = fetchsession.DefaultMinEviction
	}
}

// maxAPIKey bounds the handler table and the per-key metrics.
const maxAPIKey = wire.MaxAPIKey

// inlineFrameLimit: requests larger than this are served off the loop even
// on the embedded log (decompression and mapping of big batches take time).
const inlineFrameLimit = 256 << 10

// Gateway is the Kafka request handler: it implements engine.Handler.
type Gateway struct {
	cfg   Config
	store store.Log
	caps  store.Capabilities // what store declares (CapabilityDeclarer)
	// waiter waits for other writers' appends without polling
	// (store.AppendWaiter; nil without one, or with caps.SoleWriter);
	// noWaits is set once it answered ErrUnsupported (an Iggy 0.9 server).
	waiter  store.AppendWaiter
	noWaits atomic.Bool

	handlers [maxAPIKey]handlerFunc
	// advertised is the ApiVersions table: wire's codecs that have a handler.
	advertised []wire.APIVersionsKey
	apiMin     int16
	apiMax     int16

	conns sync.Map // uint64 → *connState
	// draining is closed when the engine starts to drain (Draining).
	draining  chan struct{}
	drainOnce sync.Once
	// ctopics is the topic metadata consumer groups assign from
	// (consumergroups.go).
	ctopics atomic.Pointer[topicSnapshot]
	// cgChanged wakes consumerGroupWriter; cgLoaded is set once the stored
	// consumer groups are loaded; cgLoadedAt remembers, per group id, when
	// this instance last looked for it in the store (consumergroups.go).
	cgChanged  chan struct{}
	cgLoaded   atomic.Bool
	cgLoadMu   sync.Mutex
	cgLoadedAt map[string]time.Time
	// cgV1 are the groups restored from the whole-group form earlier
	// versions stored whose old form is still in the store: the writer
	// removes it once the group's records are written (consumergroups.go).
	// Only consumerGroupWriter and the load touch it, under cgLoadMu.
	cgV1 map[string]bool
	// groupWrites counts the system store writes of groups, by protocol
	// (0 classic, 1 consumer): writes, bytes written, and writes that
	// failed (consumergroups.go).
	groupWrites [2]groupWriteCounts
	// clRestoreMu guards the pacing of the reads of the stored classic
	// groups for groups moved here (classicGroupReady): when each group id
	// last triggered one, and the reads of the current second.
	clRestoreMu   sync.Mutex
	clTried       map[string]time.Time
	clWindow      time.Time
	clWindowReads int
	work          chan task
	states        sync.Pool
	decode        chan struct{} // semaphore for concurrent decodes

	producerIDs producer.IDs
	producers   producerStates
	creation    creationLimits // creationlimits.go
	// adminRefused counts ACLs and credentials the caps refused
	// (adminlimits.go).
	adminRefused adminRefusals
	// txn is the transaction coordinator (transactions.go); txnReady is
	// set once its stored state is loaded.
	txn      *txn.Coordinator
	txnReady atomic.Bool
	// txnSynced is the view whose moves txnSync adopted (-1 before the
	// first); txnc the rest of transactions in a cluster (txncluster.go).
	txnSynced atomic.Int64
	txnc      txnClusterState
	bigDecode atomic.Bool
	groups    *group.Coordinator
	// system keeps kiggy's own state (system.go).
	system store.SystemStore
	acl    aclState  // the authorizer (acl.go)
	sasl   saslState // bridge/sasl.go
	// topicState holds topic configs and log starts (topicstate.go).
	topicState topicState
	// brokerConfigMu serializes changes of the dynamic broker configs
	// (brokerconfig.go).
	brokerConfigMu sync.Mutex
	// topicIDs maps topic ids to names (topicids.go).
	topicIDs topicIDs
	metrics  metrics
	notify   notifier

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// partReads runs the partition reads of concurrent Fetches (fetch.go,
	// readAll) on pooled workers (workers.go).
	partReads *workerPool[partJob]
	// fetchCache shares encoded partition reads between Fetches
	// (bridge/fetchcache); nil when the store offers none.
	fetchCache *fetchcache.Cache
	// fetchSessions holds the incremental Fetch sessions
	// (fetchsessions.go); nil when they are off.
	fetchSessions *fetchsession.Cache
	// quotaBook holds the client quotas by entity: the flags' defaults
	// under those AlterClientQuotas stored (quotas.go).
	quotaBook *quota.Book
	// quotaSeen is the stored quotas' version quotaBook was read at
	// (sharedstate.go); under adminRefused.quotaMu.
	quotaSeen sharedVersion
	// quotas meters each client's gateway time (quotas.go).
	quotas *quota.Tracker
	// mutations is the controller mutation quota's buckets (quotas.go).
	mutations *quota.Buckets
	// produceBytes and fetchBytes meter the byte-rate quotas (quotas.go).
	produceBytes, fetchBytes *quota.Tracker
	// estimates, clockedReads and sharedReads are the store as a
	// ReadEstimator, as ClockedReads and as SharedReads (fetch.go, readAll,
	// readLog and skipPart); nil when it is not.
	estimates    store.ReadEstimator
	clockedReads store.ClockedReads
	sharedReads  store.SharedReads

	// appends runs the partition appends of concurrent Produces
	// (fanout.go, runAppends) on pooled workers (workers.go).
	appends *workerPool[appendTask]
}

// connState orders one connection's requests (pipeline.go).
type connState struct {
	conn *engine.ConnInfo
	mu   sync.Mutex
	// running counts the requests started and not finished; started numbers
	// them (the newest started is number started).
	running int
	started uint64
	// open: the newest started request lets a Produce start beside it: it is
	// a Produce that has queued all its appends, or it has finished.
	open bool
	// queue holds the requests read and not started, in arrival order.
	queue []*engine.Request
	// failed is set when a handler of this connection panicked: its later
	// requests are closed unserved (panics.go).
	failed atomic.Bool
	// auth is who the connection acts as (auth.go).
	auth connAuth
	// sasl is the connection's SASL authentication state (sasl.go).
	sasl saslConn
	// quota is the connection's client's quota meter (quotas.go).
	quota connQuota
	// produceMeter and fetchMeter are its byte-rate quotas' meters.
	produceMeter, fetchMeter clientMeter
	// rounds holds a token per append round trip of the connection's
	// Produces running at once (coalesce.go, maxConnRounds); made on first
	// use, under mu.
	rounds chan struct{}
}

// task is a unit of work for the pool: a new request of a connection, or a
// call that started inline and moved off the loop.
type task struct {
	cs  *connState
	req *engine.Request
	seq uint64 // req's number among its connection's requests
	c   *call
}

// New returns a Gateway over backend.
func New(cfg Config, backend store.Log) *Gateway {
	cfg.normalize()
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{
		cfg:    cfg,
		store:  backend,
		caps:   capabilitiesOf(backend),
		system: systemOf(backend),
		work:   make(chan task, max(cfg.WorkQueueLen, 0)),
		decode: make(chan struct{}, cfg.MaxConcurrentDecodes),
		ctx:    ctx,
		cancel: cancel,
	}
	g.partReads = newWorkerPool(ctx, maxPartWorkers, g.runPartJob)
	g.appends = newWorkerPool(ctx, maxAppendWorkers, g.runAppendTask)
	g.states.New = func() any { return new(state) }
	g.producerIDs.Init(cfg.InstanceID)
	g.producers.init(g.producerLimits())
	g.cgChanged = make(chan struct{}, 1)
	g.draining = make(chan struct{})
	gcfg := cfg.Group
	gcfg.ConsumerGroupChanged = g.cgChanged
	gcfg.AwaitStore = true // consumerGroupWriter stores and reports them
	gcfg.Topics = g.classicMemberTopics
	g.groups = group.New(gcfg)
	g.creation.autoTopics, g.creation.partitions = cfg.AutoCreateTopicsLimit, cfg.MaxPartitions
	g.notify.init()
	if aw, ok := backend.(store.AppendWaiter); ok && !g.caps.SoleWriter {
		g.waiter = aw
	}
	g.initSASL()
	g.register()
	g.initACL()
	g.initTopicState()
	g.initTransactions()
	g.initConsumerGroups()
	g.initFetchCache()
	if cfg.FetchSessionCacheSlots > 0 {
		g.fetchSessions = fetchsession.New(cfg.FetchSessionCacheSlots, cfg.FetchSessionMaxPartitions, cfg.FetchSessionMinEviction)
	}
	g.initQuotas()
	g.startStateRefresh() // sharedstate.go
	for range cfg.Workers {
		g.wg.Add(1)
		go g.worker()
	}
	g.wg.Add(1)
	go g.janitor()
	if cfg.Placement != nil {
		g.wg.Add(1)
		go g.unloadLoop() // groups.go
	}
	return g
}

// capabilitiesOf returns what backend declares, or the zero value.
func capabilitiesOf(backend store.Log) store.Capabilities {
	if d, ok := backend.(store.CapabilityDeclarer); ok {
		return d.Capabilities()
	}
	return store.Capabilities{}
}

// handlerTable is the one table of the Kafka APIs the gateway serves, by
// key. Each API's file (00_produce.go, 01_fetch.go, …, named by key) fills
// its entry from an init function with handle. An API is advertised in
// ApiVersions, and served, when it has both a row in wire.APIs and an entry
// here; call.go says how to write a handler, docs/design/adding-an-api.md §2
// how to add an API.
var handlerTable [maxAPIKey]handlerFunc

// handle registers h as the handler of API key k. Each API's file calls it
// once, from init; a key registered twice or out of range is a programming
// error and panics at start.
func handle(k wire.APIKey, h handlerFunc) {
	if k < 0 || int(k) >= len(handlerTable) || handlerTable[k] != nil {
		panic("bridge: handler for API key " + strconv.Itoa(int(k)) + " registered twice or out of range")
	}
	handlerTable[k] = h
}

// register installs handlerTable (a copy per gateway, fixed from New on)
// and builds the advertised ApiVersions
// table: exactly the APIs that have both a codec in wire and a handler.
func (g *Gateway) register() {
	g.handlers = handlerTable
	for _, a := range wire.APIs {
		if a.Key >= 0 && int(a.Key) < len(g.handlers) && g.handlers[a.Key] != nil {
			g.advertised = append(g.advertised, wire.APIVersionsKey{APIKey: a.Key, MinVersion: a.Min, MaxVersion: a.Max})
			if a.Key == wire.KeyAPIVersions {
				g.apiMin, g.apiMax = a.Min, a.Max
			}
		}
	}
}

// Draining implements engine.Drainer: a stopping gateway answers what it
// holds parked at once instead of the drain waiting for it: a parked Fetch
// with what it has (it parks no more), a JoinGroup or SyncGroup waiting for
// a rebalance COORDINATOR_NOT_AVAILABLE, so that its member finds the
// coordinator again (Kafka's coordinator answers those of the groups it
// unloads at shutdown NOT_COORDINATOR, to the same effect). Answers that
// wait for their group's change to be stored (group.Config.AwaitStore) are
// let go first, within drainStoreWait. So a restart is as quick as the
// requests in flight: a consumer's long poll (franz-go's 5 s) no longer
// holds it.
func (g *Gateway) Draining() {
	g.drainOnce.Do(func() {
		close(g.draining)
		deadline := time.Now().Add(drainStoreWait)
		for g.groups.AnswersWaiting() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		g.groups.Close()
	})
}

// drainStoreWait bounds how long Draining waits for the group writer to
// store the changes answers wait for.
const drainStoreWait = 2 * time.Second

// isDraining reports whether the engine drains (Draining).
func (g *Gateway) isDraining() bool {
	select {
	case <-g.draining:
		return true
	default:
		return false
	}
}

// Close stops the workers. Requests still parked are answered by the
// engine's drain deadline closing their connections.
func (g *Gateway) Close() {
	g.groups.Close()
	g.cancel()
	g.wg.Wait()
}

// Serve implements engine.Handler.
func (g *Gateway) Serve(req *engine.Request) {
	cs := g.connState(req.Conn())
	cs.mu.Lock()
	if len(cs.queue) > 0 || !cs.mayStartLocked(req) {
		cs.queue = append(cs.queue, req)
		cs.mu.Unlock()
		return
	}
	seq := g.startLocked(cs)
	cs.mu.Unlock()
	if f := req.Frame(); g.caps.NonBlocking && len(f) <= inlineFrameLimit && !offLoop(f) {
		g.run(cs, req, seq, true)
		return
	}
	g.submit(cs, req, seq)
}

// offLoopKeys are the APIs never served on an event loop, whatever the
// backend: the group coordinator's. Each takes the lock of a group that any
// client may name, so a flood of them at one group makes that lock hot
// (docs/design/architecture.md §4); an event loop waiting on it, or handing it over
// (a contended sync.Mutex hands off and yields its thread), would stall
// every other connection of the loop with it, a steady producer's too. On
// a worker the wait is that request's alone. ListGroups, DescribeGroups
// and DeleteGroups also walk groups under the coordinator's locks.
var offLoopKeys = func() (t [maxAPIKey]bool) {
	for _, k := range []wire.APIKey{
		wire.KeyOffsetCommit, wire.KeyOffsetFetch, wire.KeyJoinGroup, wire.KeyHeartbeat, wire.KeyLeaveGroup,
		wire.KeySyncGroup, wire.KeyDescribeGroups, wire.KeyListGroups, wire.KeyTxnOffsetCommit, wire.KeyDeleteGroups,
		wire.KeyOffsetDelete, wire.KeyConsumerGroupHeartbeat, wire.KeyConsumerGroupDescribe,
	} {
		t[k] = true
	}
	return t
}()

// offLoop reports whether the request in frame (its header first: api_key
// INT16) is one of offLoopKeys. A frame too short for a key is served
// inline, where its header's decode refuses it.
func offLoop(frame []byte) bool {
	k := frameKey(frame)
	return k >= 0 && int(k) < len(offLoopKeys) && offLoopKeys[k]
}

// frameKey returns the api_key (INT16) a request frame's header starts
// with, or -1 when the frame is too short for one.
func frameKey(frame []byte) wire.APIKey {
	if len(frame) < 2 {
		return -1
	}
	return wire.APIKey(binary.BigEndian.Uint16(frame))
}

func (g *Gateway) connState(ci *engine.ConnInfo) *connState {
	if v, ok := g.conns.Load(ci.ID); ok {
		return v.(*connState)
	}
	v, _ := g.conns.LoadOrStore(ci.ID, g.newConnState(ci))
	return v.(*connState)
}

// submit hands a request to the worker pool without ever blocking the loop.
func (g *Gateway) submit(cs *connState, req *engine.Request, seq uint64) {
	select {
	case g.work <- task{cs: cs, req: req, seq: seq}:
	default:
		go g.run(cs, req, seq, false) // overload: more goroutines, never a blocked loop
	}
}

func (g *Gateway) worker() {
	defer g.wg.Done()
	for {
		select {
		case t := <-g.work:
			if t.c != nil {
				g.runOffloaded(t.c)
			} else {
				g.run(t.cs, t.req, t.seq, false)
			}
		case <-g.ctx.Done():
			return
		}
	}
}

// run serves req (number seq of its connection) and then the connection's
// queued requests that may start after it (pipeline.go), until one parks or
// none may start.
func (g *Gateway) run(cs *connState, req *engine.Request, seq uint64, inline bool) {
	for req != nil {
		if g.serveOne(cs, req, seq, inline) {
			return // parked: resume runs the rest
		}
		req, seq = g.next(cs, seq)
		if req != nil && g.deferThrottled(cs, req, seq) {
			return
		}
	}
}

// resume continues a connection after its request number seq, which had
// parked, completed.
func (g *Gateway) resume(cs *connState, seq uint64) {
	if req, next := g.next(cs, seq); req != nil && !g.deferThrottled(cs, req, next) {
		g.submit(cs, req, next)
	}
}

// serveOne parses the header and dispatches. It reports whether the request
// parked.
func (g *Gateway) serveOne(cs *connState, req *engine.Request, seq uint64, inline bool) bool {
	if g.saslRawPending(cs) {
		return g.serveSASLToken(cs, req, seq, inline)
	}
	hdr, body, err := wire.ParseRequestHeader(req.Frame())
	if err != nil {
		// docs/design/kafka-protocol.md §1.1: Kafka closes the connection on an unknown
		// API key or a version outside its range (ApiVersions excepted,
		// KIP-511, which ParseRequestHeader lets through).
		req.Close(engine.ReasonProtocolError, "unsupported_version")
		return false
	}
	h := g.handler(hdr.APIKey)
	if h == nil {
		req.Close(engine.ReasonProtocolError, "unsupported_version")
		return false
	}
	if cs.failed.Load() {
		// An earlier request's handler panicked: the connection is closing
		// and this request is dropped, as the engine drops the ones it has
		// not dispatched yet.
		req.Close(engine.ReasonProtocolError, closeHandlerPanic)
		return false
	}
	if !g.saslGate(cs, req, &hdr) {
		return false
	}
	g.metrics.countRequest(hdr.APIKey, hdr.APIVersion)
	st := g.states.Get().(*state)
	c := &st.call
	start := time.Now()
	*c = call{cs: cs, req: req, seq: seq, hdr: hdr, body: body, state: st, inline: inline, start: start}
	meter, throttle := g.meterCall(c)
	parked, ok := g.invoke(h, c)
	// c belongs to its completer once invoked (a parked call may be done
	// and reused already): only locals from here on.
	g.chargeCall(cs, meter, start, throttle, inline)
	if ok && !parked {
		g.observe(c)
		g.putState(st)
	}
	return parked
}

func (g *Gateway) handler(k wire.APIKey) handlerFunc {
	if k < 0 || int(k) >= len(g.handlers) {
		return nil
	}
	return g.handlers[k]
}

// bigDecodeBytes: a Produce request that decoded more than this (or hit the
// decode budget) asks the janitor to hand freed memory back to the OS.
const bigDecodeBytes = 32 << 20

// janitor forgets the state of closed connections, expires producer state,
// and gives the process's memory policy
// (Config.ReclaimMemory) its tick.
func (g *Gateway) janitor() {
	defer g.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	sweep := 0
	var lastRequests uint64
	lastRequest := time.Now()
	for {
		select {
		case <-t.C:
			now := time.Now()
			var idle time.Duration
			if n := g.metrics.totalRequests(); n != lastRequests {
				lastRequests, lastRequest = n, now
			} else {
				idle = now.Sub(lastRequest)
			}
			if big := g.bigDecode.Swap(false); g.cfg.ReclaimMemory != nil {
				g.cfg.ReclaimMemory(idle, big)
			}
			if sweep++; sweep%5 != 0 {
				continue
			}
			g.quotas.Expire(now)
			g.mutations.Expire(now)
			g.produceBytes.Expire(now)
			g.fetchBytes.Expire(now)
			if sweep%30 == 0 {
				// Once a minute (Kafka checks every
				// producer.id.expiration.check.interval.ms, 10 min).
				g.producers.expire(now.UnixMilli(), g.cfg.ProducerIDExpiration)
				g.notify.prune()
				g.producerIDs.Expire(now.UnixMilli() - g.cfg.ProducerIDExpiration.Milliseconds())
			}
			g.conns.Range(func(k, v any) bool {
				cs := v.(*connState)
				cs.mu.Lock()
				idle := cs.running == 0 && len(cs.queue) == 0
				cs.mu.Unlock()
				if idle && cs.conn.Closed() {
					g.conns.Delete(k)
				}
				return true
			})
		case <-g.ctx.Done():
			return
		}
	}
}

// putState returns a state to the pool, trimmed.
func (g *Gateway) putState(st *state) {
	st.trim()
	g.states.Put(st)
}

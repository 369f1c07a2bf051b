// Command kiggy is the gateway: a Kafka broker to stock Kafka clients whose
// records land in Apache Iggy (with --iggy-addr) or in the embedded log.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/fetchsession"
	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
	"github.com/kiggy-io/kiggy/quota"
)

// options is every knob of the gateway; see registerOptions for defaults,
// units and ranges, and docs/CONFIGURATION.md.
type options struct {
	listen, advertisedHost, engine string
	advertisedPort                 int64

	nodeID, defaultPartitions, instanceID          int64
	clusterID                                      string
	autoCreateTopics                               bool
	autoCreateTopicsLimit                          int64
	producerIDExpiration                           time.Duration
	transactionMaxTimeout                          time.Duration
	transactionalIDExpiration                      time.Duration
	consumerSessionTimeout, consumerHeartbeat      time.Duration
	consumerAssignor                               string
	maxTransactionalIDs                            int64
	maxACLs, maxScramCredentials                   int64
	maxPartitions                                  int64
	maxClientQuotaEntities                         int64
	producerStateScan                              int64
	refuseUnissuedProducerIDs                      bool
	maxProducerStates, maxProducerStatesPrincipal  int64
	groupMaxSize, maxGroupMembers, maxGroups       int64
	fetchSessionSlots, fetchSessionMaxPartitions   int64
	quotaRequestPercentage, quotaWindowNum         int64
	quotaWindowSize                                time.Duration
	quotaControllerMutationRate                    float64
	quotaProducerByteRate, quotaConsumerByteRate   int64
	maxConnectionCreationRate, connectionRatePerIP int64
	fetchSessionEviction                           time.Duration

	maxConnectionsPerIP                                                         int64
	maxConnections, maxFrameSize, maxInFlight, maxInFlightBytes, maxOutputBytes int64
	idleTimeout, readTimeout, writeTimeout, drainTimeout                        time.Duration
	decodeBudgetBytes, decodeBudgetRecords, maxConcurrentDecodes, workers       int64
	produceTimeoutCap                                                           time.Duration

	memlogPartitionBytes, memlogTotalBytes int64

	iggyAddr, iggyUsername, iggyPassword, iggyToken, iggyStream       string
	iggyPoolSize                                                      int64
	iggyReadSessions                                                  int64
	iggyRequestTimeout                                                time.Duration
	iggyReadCacheBytes, iggyFetchCacheBytes, iggyTailWindowBytes      int64
	iggySoleWriter                                                    bool
	iggySessionTokens                                                 bool
	iggyDurability                                                    string
	iggyProtocol                                                      string
	iggyTLS                                                           bool
	iggyTLSCAFile, iggyTLSServerName, iggyTLSCertFile, iggyTLSKeyFile string

	adminAddr, cpuProfile    string
	adminPprof, profileOnSig bool

	logLevel, logFormat string

	lst     listenerOptions // cmd/kiggy/listeners.go
	sasl    saslOptions     // cmd/kiggy/sasl.go
	acl     aclOptions      // cmd/kiggy/acl.go
	cluster clusterOptions  // cmd/kiggy/cluster.go

	configFile string // applied by settings.parse before the rest
	gomaxprocs int64
}

var groups = []string{"General", "Listener", "TLS", "SASL", "Kafka", "Limits", "Embedded log", "Iggy backend", "Cluster", "Authorization", "Admin", "Logging"}

func registerOptions(s *settings, o *options) {
	s.String("General", configKnob, &o.configFile, "", "configuration file of name = value lines (flag names without dashes; # comments); variables and flags win over it")
	s.Int("General", "gomaxprocs", &o.gomaxprocs, 0, 0, 1<<12, "threads running the gateway's Go code at once (Go's GOMAXPROCS), which the defaults of its event loops (1×), Iggy sessions (4×, at least 32) and concurrent decodes (2×) follow; 0 = the runtime's choice, the CPUs the process may use; on a host shared with iggy-server, the CPUs kiggy should take of them (docs/IGGY.md, \"Sharing a host with iggy-server\")")

	s.String("Listener", "listen", &o.listen, "127.0.0.1:9092", "address the Kafka listener binds (host:port)")
	s.String("Listener", "advertised-host", &o.advertisedHost, "", "host clients are told to connect to (empty = the address the client reached)")
	s.Int("Listener", "advertised-port", &o.advertisedPort, 0, 0, 65535, "port clients are told to connect to (0 = the port the client reached)")
	s.String("Listener", "engine", &o.engine, "", `network engine: "epoll" (Linux) or "net" (empty = the default for this OS); TLS listeners always run on net-engine goroutines`)
	registerListenerOptions(s, &o.lst)
	registerSASLOptions(s, &o.sasl)

	s.Int("Kafka", "node-id", &o.nodeID, bridge.DefaultNodeID, 0, math.MaxInt32, "broker id in Metadata (Kafka node.id)")
	s.String("Kafka", "cluster-id", &o.clusterID, bridge.DefaultClusterID, "cluster id in Metadata")
	s.Bool("Kafka", "auto-create-topics", &o.autoCreateTopics, true, "create topics on Metadata requests that allow it (Kafka auto.create.topics.enable)")
	s.Int("Limits", "auto-create-topics-limit", &o.autoCreateTopicsLimit, bridge.DefaultAutoCreateTopicsLimit, 0, 1<<30, "Metadata auto-creation answers UNKNOWN_TOPIC_OR_PARTITION, as with --auto-create-topics=false, while the log holds this many topics (however created; CreateTopics is not held to it, only to --max-partitions); 0 = no cap")
	s.Int("Kafka", "default-partitions", &o.defaultPartitions, bridge.DefaultNumPartitions, 1, 1000, "partitions of auto-created topics (Kafka num.partitions)")
	s.Int("Kafka", "instance-id", &o.instanceID, 0, 0, 65535, "gateway instance id in the high bits of producer ids (IGGY_KAFKA_INSTANCE_ID)")
	s.Duration("Kafka", "producer-id-expiration", &o.producerIDExpiration, 24*time.Hour, time.Second, 365*24*time.Hour, "drop an idempotent producer's sequence state after this long without appends (Kafka producer.id.expiration.ms)")
	s.Int("Kafka", "fetch-session-cache-slots", &o.fetchSessionSlots, fetchsession.DefaultSlots, 0, 1<<20, "incremental Fetch sessions held (KIP-227): a consumer's Fetch then names only the partitions that changed and is answered only those with news (Kafka max.incremental.fetch.session.cache.slots); 0 = sessions off, every Fetch answered whole")
	s.Int("Limits", "fetch-session-max-partitions", &o.fetchSessionMaxPartitions, fetchsession.DefaultMaxPartitions, 1, 1<<30, "partitions all fetch sessions may hold (about 200 bytes each); a full Fetch past it gets no session, an incremental one that would pass it closes its session (answered whole, the client starts again with a full Fetch)")
	s.Duration("Kafka", "fetch-session-min-eviction", &o.fetchSessionEviction, fetchsession.DefaultMinEviction, time.Millisecond, 24*time.Hour, "a fetch session unused this long may be evicted by any new one, and one older than this by a new one of more partitions (Kafka min.incremental.fetch.session.eviction.ms)")
	s.Duration("Kafka", "transaction-max-timeout", &o.transactionMaxTimeout, 15*time.Minute, time.Second, 24*time.Hour, "the longest transaction.timeout.ms a transactional producer may ask for; longer is INVALID_TRANSACTION_TIMEOUT (Kafka transaction.max.timeout.ms)")
	s.Duration("Kafka", "transactional-id-expiration", &o.transactionalIDExpiration, 7*24*time.Hour, time.Minute, 365*24*time.Hour, "forget a transactional id after this long with no transaction (Kafka transactional.id.expiration.ms)")
	s.Duration("Kafka", "group-consumer-session-timeout", &o.consumerSessionTimeout, group.DefaultConsumerSessionTimeout, time.Second, time.Hour, "fence a consumer-protocol group member (KIP-848) that does not heartbeat for this long (Kafka group.consumer.session.timeout.ms)")
	s.String("Kafka", "group-consumer-assignor", &o.consumerAssignor, group.AssignorUniform, "server assignor of consumer-protocol groups whose members set no group.remote.assignor: uniform or range (Kafka: the first of group.consumer.assignors)")
	s.Duration("Kafka", "group-consumer-heartbeat-interval", &o.consumerHeartbeat, group.DefaultConsumerHeartbeatInterval, 100*time.Millisecond, time.Hour, "heartbeat interval told to consumer-protocol group members (Kafka group.consumer.heartbeat.interval.ms)")
	s.Int("Limits", "max-transactional-ids", &o.maxTransactionalIDs, bridge.DefaultMaxTransactionalIDs, 0, 1<<30, "transactional ids held; InitProducerId for a new one past it gets COORDINATOR_NOT_AVAILABLE, which clients retry (ids are forgotten after --transactional-id-expiration); 0 = no cap")
	s.Bool("Kafka", "refuse-unissued-producer-ids", &o.refuseUnissuedProducerIDs, true, "answer UNKNOWN_PRODUCER_ID to an idempotent batch whose producer id no InitProducerId handed out, instead of creating a state for it (docs/LIMITS.md)")
	s.Int("Limits", "max-producer-states", &o.maxProducerStates, bridge.DefaultMaxProducerStates, 0, 1<<40, "idempotent producer states (producer id × partition) held in total; a new producer past it gets THROTTLING_QUOTA_EXCEEDED; 0 = no cap")
	s.Int("Limits", "max-producer-states-per-principal", &o.maxProducerStatesPrincipal, bridge.DefaultMaxProducerStatesPerPrincipal, 0, 1<<40, "idempotent producer states one principal's batches created; as above; 0 = no cap")
	s.Int("Limits", "max-partitions", &o.maxPartitions, bridge.DefaultMaxPartitions, 0, 1<<30, "partitions the log may hold; a CreateTopics or CreatePartitions past it gets POLICY_VIOLATION, a Metadata auto-creation UNKNOWN_TOPIC_OR_PARTITION (KIP-578's max.partitions, not in Kafka); 0 = no cap")
	s.Int("Limits", "max-acls", &o.maxACLs, bridge.DefaultMaxACLs, 0, 1<<30, "ACLs CreateAcls may store; a new one past it gets POLICY_VIOLATION; 0 = no cap")
	s.Int("Limits", "max-scram-credentials", &o.maxScramCredentials, bridge.DefaultMaxScramCredentials, 0, 1<<30, "SCRAM credentials (user × mechanism) AlterUserScramCredentials may store; a new one past it gets POLICY_VIOLATION; 0 = no cap")
	s.Int("Limits", "max-client-quota-entities", &o.maxClientQuotaEntities, bridge.DefaultMaxClientQuotaEntities, 0, 1<<30, "entities (users, client ids, their pairs, IPs) AlterClientQuotas may store quotas of; a new one past it gets POLICY_VIOLATION; 0 = no cap")
	s.Int("Limits", "group-max-size", &o.groupMaxSize, group.DefaultMaxGroupSize, 0, math.MaxInt32, "members (with member ids handed out by MEMBER_ID_REQUIRED and not yet used) one consumer group may hold; a join past it gets GROUP_MAX_SIZE_REACHED (Kafka group.max.size); 0 = no cap")
	s.Int("Limits", "max-group-members", &o.maxGroupMembers, group.DefaultMaxMembers, 0, math.MaxInt32, "members (as above) of all consumer groups together; a new member past it gets COORDINATOR_NOT_AVAILABLE, which clients retry; 0 = no cap")
	s.Int("Limits", "max-groups", &o.maxGroups, group.DefaultMaxGroups, 0, math.MaxInt32, "consumer groups held (joined, or holding offsets of simple commits); a new group past it evicts an empty group holding no offsets, or gets COORDINATOR_NOT_AVAILABLE; 0 = no cap")
	s.Int("Limits", "quota-request-percentage", &o.quotaRequestPercentage, 0, 0, 1<<20, "request quota of every client (user, client id): the gateway time its requests may use, in percent of one thread; a client over it gets throttle_time_ms and its connection is not read for that long (Kafka request_percentage of the default user and client id, KIP-124); 0 = no quota; the value of the default entity, which AlterClientQuotas (kafka-configs --alter) may override and set per user, client id or pair")
	s.Float("Limits", "quota-controller-mutation-rate", &o.quotaControllerMutationRate, 0, 0, 1e9, "partitions every client (user, client id) may create or delete a second through CreateTopics, CreatePartitions and DeleteTopics, with a burst of the rate times --quota-window-num × --quota-window-size; a topic of a client over it gets THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+; older versions are admitted) and throttle_time_ms (Kafka controller_mutation_rate of the default user and client id, KIP-599); 0 = no quota; the value of the default entity, which AlterClientQuotas (kafka-configs --alter) may override and set per user, client id or pair")
	s.Int("Limits", "quota-producer-byte-rate", &o.quotaProducerByteRate, 0, 0, 1<<50, "Produce request bytes every client (user, client id) may send a second, measured over --quota-window-num × --quota-window-size; a client over it gets throttle_time_ms in its Produce responses and its connection is not read for that long, at most one window (Kafka producer_byte_rate of the default user and client id); 0 = no quota; the value of the default entity, which AlterClientQuotas (kafka-configs --alter) may override and set per user, client id or pair")
	s.Int("Limits", "quota-consumer-byte-rate", &o.quotaConsumerByteRate, 0, 0, 1<<50, "record bytes every client (user, client id) may fetch a second, measured as --quota-producer-byte-rate; a consumer's Fetch while it is over is answered at once with no partitions and throttle_time_ms, and its connection is not read for that long, at most one window (Kafka consumer_byte_rate of the default user and client id, KIP-219); 0 = no quota; the value of the default entity, which AlterClientQuotas (kafka-configs --alter) may override and set per user, client id or pair")
	s.Int("Limits", "max-connection-creation-rate", &o.maxConnectionCreationRate, 0, 0, 1<<30, "connections accepted a second over all listeners; past it the acceptor waits before serving the next, at most one --quota-window-size (Kafka max.connection.creation.rate, KIP-612); 0 = no cap")
	s.Int("Limits", "connection-creation-rate-per-ip", &o.connectionRatePerIP, 0, 0, 1<<30, "connections one client IP address may open a second; one over it is held unserved for its throttle, at most one --quota-window-size, then closed (Kafka connection_creation_rate of the default IP, KIP-612); 0 = no cap; the value of the default entity, which AlterClientQuotas (kafka-configs --alter) may override and set per IP")
	s.Int("Limits", "quota-window-num", &o.quotaWindowNum, quota.DefaultSamples, 2, 1000, "samples the request quota and the connection creation rates measure usage over (Kafka quota.window.num)")
	s.Duration("Limits", "quota-window-size", &o.quotaWindowSize, quota.DefaultWindow, time.Millisecond, time.Hour, "the span of each sample (Kafka quota.window.size.seconds; shorter windows let the quota act sooner); the longest throttle is one window")
	s.Int("Kafka", "producer-state-scan", &o.producerStateScan, 16384, 1, 1<<24, "messages of a partition's tail read back to rebuild its idempotent producer state after a start")

	s.Int("Limits", "max-connections", &o.maxConnections, engine.DefaultMaxConnections, 1, 1<<20, "open connections; more are closed at once (Kafka max.connections)")
	s.Int("Limits", "max-connections-per-ip", &o.maxConnectionsPerIP, 0, 0, 1<<20, "open connections of one client IP address; more are closed at once (Kafka max.connections.per.ip); 0 = no cap")
	s.Int("Limits", "max-frame-size", &o.maxFrameSize, engine.DefaultMaxFrameSize, 1<<10, 1<<30, "largest request frame in bytes (Kafka socket.request.max.bytes)")
	s.Int("Limits", "max-in-flight", &o.maxInFlight, engine.DefaultMaxInFlight, 1, 1<<16, "requests in flight per connection before reads pause")
	s.Int("Limits", "max-in-flight-bytes", &o.maxInFlightBytes, engine.DefaultMaxInFlightBytes, 1<<10, 1<<34, "request bytes in flight per connection before reads pause (Kafka queued.max.request.bytes)")
	s.Int("Limits", "max-output-bytes", &o.maxOutputBytes, engine.DefaultMaxOutputBytes, 1<<10, 1<<34, "queued response bytes per connection before reads pause")
	s.Duration("Limits", "idle-timeout", &o.idleTimeout, engine.DefaultIdleTimeout, time.Second, 24*time.Hour, "close connections idle this long (Kafka connections.max.idle.ms)")
	s.Duration("Limits", "read-timeout", &o.readTimeout, engine.DefaultReadTimeout, 100*time.Millisecond, time.Hour, "close a connection whose request frame takes longer to arrive")
	s.Duration("Limits", "write-timeout", &o.writeTimeout, engine.DefaultWriteTimeout, 100*time.Millisecond, time.Hour, "close a connection that does not read a response for this long")
	s.Duration("Limits", "drain-timeout", &o.drainTimeout, 30*time.Second, 0, time.Hour, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
	s.Int("Limits", "decode-budget-bytes", &o.decodeBudgetBytes, 0, 0, 1<<40, "decompressed bytes one Produce request may decode (0 = 2 × max-frame-size)")
	s.Int("Limits", "decode-budget-records", &o.decodeBudgetRecords, bridge.DefaultDecodeBudgetRecords, 1, 1<<40, "records one Produce request may decode")
	s.Int("Limits", "max-concurrent-decodes", &o.maxConcurrentDecodes, 0, 0, 1<<16, "compressed batches decoded at once (0 = 2 × GOMAXPROCS)")
	s.Int("Limits", "workers", &o.workers, bridge.DefaultWorkers, 1, 1<<16, "goroutines serving requests that wait on the backend")
	s.Duration("Limits", "produce-timeout-cap", &o.produceTimeoutCap, bridge.DefaultProduceTimeoutCap, time.Millisecond, 10*time.Minute, "cap on a Produce request's timeout_ms")

	s.Int("Embedded log", "memlog-partition-bytes", &o.memlogPartitionBytes, 1<<30, 1<<10, 1<<40, "bytes kept per partition; older records are dropped (Kafka retention.bytes)")
	s.Int("Embedded log", "memlog-total-bytes", &o.memlogTotalBytes, 0, 0, 1<<50, "memory all partitions' data may hold; beyond it the oldest data across partitions is dropped (0 = a quarter of the machine's memory, or of the cgroup limit)")

	s.String("Iggy backend", "iggy-addr", &o.iggyAddr, "", "Iggy server TCP address, or several nodes of an Iggy cluster separated by commas (any node: kiggy finds the primary); empty = run on the embedded log")
	s.String("Iggy backend", "iggy-username", &o.iggyUsername, "iggy", "Iggy user")
	s.String("Iggy backend", "iggy-password", &o.iggyPassword, "iggy", "Iggy password")
	s.String("Iggy backend", "iggy-token", &o.iggyToken, "", "Iggy personal access token (instead of username and password)")
	s.String("Iggy backend", "iggy-stream", &o.iggyStream, "kafka", "Iggy stream that holds the Kafka topics")
	s.Bool("Iggy backend", "iggy-session-tokens", &o.iggySessionTokens, true, "with --iggy-username/--iggy-password: log the first Iggy session in with them, create a personal access token (expiring after an hour, renewed at half of it, deleted at shutdown) and log every other session in with it; iggy-server checks a password against an Argon2 hash, ~18 ms of its CPU a login, a token against a SHA-256 (docs/IGGY.md, \"Sessions\"); false: every session logs in with the password")
	s.Int("Iggy backend", "iggy-pool-size", &o.iggyPoolSize, 0, 0, 1024, "Iggy sessions (connections, one request in flight each) in the pool; 0 = 32, or 4 × GOMAXPROCS where more; more at high rates (docs/IGGY.md, \"Sessions\")")
	s.Int("Iggy backend", "iggy-read-sessions", &o.iggyReadSessions, 0, 0, 1024, "of the --iggy-pool-size sessions, how many reads of records may hold at once; the others are kept for appends, offset commits and metadata, so that a Fetch of many partitions never makes a Produce wait behind its polls; 0 = three quarters of the pool (24 of 32); the pool size or more = reads may hold every session (docs/IGGY.md, \"Sessions\")")
	s.String("Iggy backend", "iggy-durability", &o.iggyDurability, "written", "when Iggy confirms a write kiggy acknowledges, for topics kiggy creates: written (to the segment file before the reply: an iggy-server crash loses nothing), fsync (and fsynced: a machine crash loses nothing), buffered (Iggy's defaults: a crash of iggy-server can lose acknowledged records)")
	s.String("Iggy backend", "iggy-protocol", &o.iggyProtocol, "auto", "Iggy binary protocol: auto (0.12 first, then what the server's refusal names), 0.11 (Iggy 0.9) or 0.12 (Iggy 0.10)")
	s.Bool("Iggy backend", "iggy-tls", &o.iggyTLS, false, "connect to Iggy with TLS (the server's TCP TLS listener)")
	s.String("Iggy backend", "iggy-tls-ca-file", &o.iggyTLSCAFile, "", "PEM file of the CA certificates that verify the Iggy server (empty = the system's roots)")
	s.String("Iggy backend", "iggy-tls-server-name", &o.iggyTLSServerName, "", "name the Iggy server's certificate must carry (empty = the host of each address dialled)")
	s.String("Iggy backend", "iggy-tls-cert-file", &o.iggyTLSCertFile, "", "PEM client certificate for an Iggy server that asks for one (with --iggy-tls-key-file)")
	s.String("Iggy backend", "iggy-tls-key-file", &o.iggyTLSKeyFile, "", "PEM private key of --iggy-tls-cert-file")
	s.Duration("Iggy backend", "iggy-request-timeout", &o.iggyRequestTimeout, 30*time.Second, 100*time.Millisecond, 10*time.Minute, "deadline of one Iggy request; the connection is dropped when it passes")
	s.Int("Iggy backend", "iggy-read-cache-bytes", &o.iggyReadCacheBytes, 64<<20, 0, 1<<40, "memory for recent Iggy poll replies served to later Fetches and polled ahead of sequential consumers, shared by every consumer group near a partition's tail (docs/IGGY.md, \"Read (PollMessages)\"); 0 = off")
	s.Int("Iggy backend", "iggy-fetch-cache-bytes", &o.iggyFetchCacheBytes, 64<<20, 0, 1<<40, "memory for the Kafka record batches one Fetch encoded, copied into later Fetches of the same partition, offset and limits (other consumer groups) instead of mapping the messages again (docs/IGGY.md, \"Fetches share encoded batches\"); needs the read cache; 0 = off")
	s.Int("Iggy backend", "iggy-tail-window-bytes", &o.iggyTailWindowBytes, 32<<20, 0, 1<<40, "memory for the records this gateway appended last, kept as Iggy confirmed them so that consumers at the tail are served without polling Iggy, shared fairly by the partitions (docs/IGGY.md, \"The tail window\"); needs the read cache; 0 = off")
	s.Bool("Iggy backend", "iggy-sole-writer", &o.iggySoleWriter, false, "declare that nothing but this gateway appends to the stream's topics (no Iggy-native producer, a single instance): a consumer at the tail then waits for this gateway's own appends instead of polling Iggy every 100 ms, and costs Iggy nothing while idle; records another writer appends anyway are seen only after this gateway's next append to the partition (docs/IGGY.md, \"The tail window\"); not with --cluster-membership")

	registerACLOptions(s, &o.acl)

	s.String("Admin", "admin-addr", &o.adminAddr, "127.0.0.1:9644", "address of the metrics and health listener (/metrics, /healthz, /readyz); empty = off")
	s.Bool("Admin", "admin-pprof", &o.adminPprof, false, "also serve Go's profiler at /debug/pprof/ on the admin listener (CPU, heap, goroutines); keep the admin address private")
	s.String("Admin", "cpuprofile", &o.cpuProfile, "", "write a CPU profile to this file, from start to shutdown")
	s.Bool("Admin", "profile-on-signal", &o.profileOnSig, false, "with --cpuprofile: profile only between SIGUSR1 and SIGUSR2, one <cpuprofile>-<n>.pprof per window (kbench -profile)")

	registerClusterOptions(s, &o.cluster)

	s.String("Logging", "log-level", &o.logLevel, "info", "debug, info, warn or error")
	s.String("Logging", "log-format", &o.logFormat, "text", "text or json")
}

func main() {
	os.Exit(run(os.Args[1:], os.Environ()))
}

func run(args, env []string) int {
	if wantVersion(args) { // cmd/kiggy/version.go
		printVersion(os.Stdout)
		return 0
	}
	if wantProbe(args) { // cmd/kiggy/probe.go
		return probe(args, env, os.Stderr)
	}
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse(args, env); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			s.usage(os.Stdout, groups)
			return 0
		}
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if !slices.Contains(group.Assignors, o.consumerAssignor) {
		fmt.Fprintf(os.Stderr, "kiggy: --group-consumer-assignor %q: want one of %v\n", o.consumerAssignor, group.Assignors)
		return 2
	}
	if err := resolveListeners(s, &o); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if _, err := o.sasl.bridgeConfig(); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if o.sasl.plainVerifier == "iggy" && o.iggyAddr == "" {
		fmt.Fprintln(os.Stderr, "kiggy: --sasl-plain-verifier iggy needs the Iggy backend (--iggy-addr)")
		return 2
	}
	if _, err := o.acl.authorization(); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if _, err := store.ParseDurability(o.iggyDurability); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: --iggy-durability: %v\n", err)
		return 2
	}
	if _, err := iggyProtocol(o.iggyProtocol); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: --iggy-protocol: %v\n", err)
		return 2
	}
	logger, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if err := checkCluster(o); err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	clusterDefaults(&o)
	if o.gomaxprocs > 0 {
		runtime.GOMAXPROCS(int(o.gomaxprocs)) // also ends the runtime's own updates of it
	}
	lset, err := setupListeners(&o, logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kiggy: %v\n", err)
		return 2
	}
	if err := serve(o, lset, logger); err != nil {
		logger.Error("kiggy stopped", "err", err)
		return 1
	}
	return 0
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func serve(o options, lset *listenerSetup, logger *slog.Logger) error {
	stopProfile, err := startProfiling(o.cpuProfile, o.profileOnSig, logger)
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx := context.Background()
	backend, err := openBackend(ctx, o, logger)
	if err != nil {
		return err
	}
	defer backend.Close()
	placement, leave, err := startCluster(ctx, o, lset, backend, logger)
	if err != nil {
		return err
	}
	defer leave() // also on the signal path, before the drain: see below
	peers, closePeers, err := startPeers(o, lset, placement, logger)
	if err != nil {
		return err
	}
	defer closePeers()

	authz, err := o.acl.authorization()
	if err != nil {
		return err
	}
	saslCfg, err := o.sasl.bridgeConfig()
	if err != nil {
		return err
	}
	if err := o.sasl.plainAgainstIggy(&saslCfg, backend); err != nil {
		return err
	}
	bcfg := o.bridgeConfig()
	bcfg.Authorization, bcfg.SASL, bcfg.Placement, bcfg.Peers = authz, saslCfg, placement, peers
	lset.configure(&bcfg)
	// bridge.NewServer is the one wiring (internal/testing/kiggytest uses it too):
	// the gateway takes its frame limit and logger from the engine's config.
	s, err := bridge.NewServer(o.engine, o.engineConfig(logger), bcfg, backend)
	if err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	gw, srv := s.Gateway, s.Engine
	defer gw.Close()
	lns, err := lset.listen(&o)
	if err != nil {
		return err
	}
	adm := &admin{pprof: o.adminPprof, srv: srv, store: backend, gw: gw, started: time.Now()}
	stopAdmin, err := adm.start(o.adminAddr, logger)
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		return err
	}
	defer stopAdmin()
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		logger.Info("kiggy listening", "listener", ln.Name, "protocol", lset.protocols[ln.Name].String(), "addr", ln.Addr().String(), "engine", engineName(o.engine), "backend", backendName(o), "gomaxprocs", runtime.GOMAXPROCS(0))
		go func() { errc <- srv.Serve(ln) }()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case s := <-sig:
		logger.Info("draining", "signal", s.String(), "deadline", o.drainTimeout)
	}
	adm.draining.Store(true)
	// Leave the cluster first: the others take this instance's partitions
	// and groups over at once, while its connections drain.
	leave()
	dctx, cancel := context.WithTimeout(ctx, o.drainTimeout)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		logger.Warn("drain deadline passed; remaining connections closed", "err", err)
	}
	for range lns {
		<-errc
	}
	logger.Info("kiggy stopped")
	return nil
}

// bridgeConfig is the gateway's configuration from the options, but for
// what serve builds at start-up (authorization, SASL, placement, peers).
func (o *options) bridgeConfig() bridge.Config {
	return bridge.Config{
		NodeID:                    int32(o.nodeID),
		AdvertisedHost:            o.advertisedHost,
		AdvertisedPort:            int32(o.advertisedPort),
		ClusterID:                 o.clusterID,
		NoAutoCreateTopics:        !o.autoCreateTopics,
		AutoCreateTopicsLimit:     int(uncapped(o.autoCreateTopicsLimit)),
		DefaultPartitions:         int32(o.defaultPartitions),
		InstanceID:                uint16(o.instanceID),
		DecodeBudgetBytes:         o.decodeBudgetBytes,
		DecodeBudgetRecords:       o.decodeBudgetRecords,
		MaxConcurrentDecodes:      int(o.maxConcurrentDecodes),
		Workers:                   int(o.workers),
		ProduceTimeoutCap:         o.produceTimeoutCap,
		ProducerIDExpiration:      o.producerIDExpiration,
		StateRefresh:              o.cluster.stateRefresh,
		TransactionMaxTimeout:     o.transactionMaxTimeout,
		TransactionalIDExpiration: o.transactionalIDExpiration,
		MaxTransactionalIDs:       int(uncapped(o.maxTransactionalIDs)),
		MaxPartitions:             int(uncapped(o.maxPartitions)),
		MaxACLs:                   int(uncapped(o.maxACLs)),
		FetchSessionCacheSlots:    int(uncapped(o.fetchSessionSlots)),
		Quota: quota.Config{RequestPercentage: float64(o.quotaRequestPercentage),
			Samples: int(o.quotaWindowNum), Window: o.quotaWindowSize},
		ControllerMutationRate:        o.quotaControllerMutationRate,
		ProducerByteRate:              o.quotaProducerByteRate,
		ConsumerByteRate:              o.quotaConsumerByteRate,
		FetchSessionMaxPartitions:     int(o.fetchSessionMaxPartitions),
		FetchSessionMinEviction:       o.fetchSessionEviction,
		MaxScramCredentials:           int(uncapped(o.maxScramCredentials)),
		MaxClientQuotaEntities:        int(uncapped(o.maxClientQuotaEntities)),
		ProducerStateScan:             int(o.producerStateScan),
		RefuseUnissuedProducerIDs:     o.refuseUnissuedProducerIDs,
		MaxProducerStates:             uncapped(o.maxProducerStates),
		MaxProducerStatesPerPrincipal: uncapped(o.maxProducerStatesPrincipal),
		ReclaimMemory:                 reclaimMemory,
		Group: group.Config{
			MaxGroupSize: int(o.groupMaxSize),
			MaxMembers:   int(o.maxGroupMembers),
			MaxGroups:    int(o.maxGroups),

			ConsumerSessionTimeout:    o.consumerSessionTimeout,
			ConsumerHeartbeatInterval: o.consumerHeartbeat,
			DefaultAssignor:           o.consumerAssignor,
		},
	}
}

// engineConfig is the network engine's configuration from the options.
func (o *options) engineConfig(logger *slog.Logger) engine.Config {
	return engine.Config{
		MaxConnections:              int(o.maxConnections),
		MaxConnectionsPerIP:         int(o.maxConnectionsPerIP),
		MaxConnectionCreationRate:   int(o.maxConnectionCreationRate),
		ConnectionCreationRatePerIP: int(o.connectionRatePerIP),
		RateSamples:                 int(o.quotaWindowNum),
		RateWindow:                  o.quotaWindowSize,
		MaxFrameSize:                int32(o.maxFrameSize),
		MaxInFlight:                 int(o.maxInFlight),
		MaxInFlightBytes:            int(o.maxInFlightBytes),
		MaxOutputBytes:              int(o.maxOutputBytes),
		IdleTimeout:                 o.idleTimeout,
		ReadTimeout:                 o.readTimeout,
		WriteTimeout:                o.writeTimeout,
		Logger:                      logger,
	}
}

func engineName(e string) string {
	if e == "" {
		return "default"
	}
	return e
}

func backendName(o options) string {
	if o.iggyAddr != "" {
		return "iggy " + o.iggyAddr
	}
	return "embedded log"
}

// openBackend opens the storage: Iggy when --iggy-addr is set, else the
// embedded log. The gateway reads what each backend can do from the backend
// itself (store.Capabilities).
func openBackend(ctx context.Context, o options, logger *slog.Logger) (store.Log, error) {
	if o.iggyAddr != "" {
		return openIggy(ctx, o, logger)
	}
	return memlog.New(memlog.Config{PartitionBytes: o.memlogPartitionBytes, TotalBytes: o.memlogTotalBytes}), nil
}

// uncapped maps a flag's 0 ("no cap") to the negative bridge.Config means
// by it (its 0 is the default).
func uncapped(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

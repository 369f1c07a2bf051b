package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Target names, in the order they run in the first repetition.
const (
	// TargetKafka is Apache Kafka 4.x, one KRaft node started from the
	// jars in tests/java/lib (internal/testing/kafkatest).
	TargetKafka = "kafka"
	// TargetKiggy is the kiggy gateway on its embedded log (memlog).
	TargetKiggy = "kiggy"
	// TargetKiggyIggy is the kiggy gateway on the Iggy backend, against a
	// fresh iggytest server or Config.IggyAddr.
	TargetKiggyIggy = "kiggy-iggy"
	// TargetKiggyIggyFsync is kiggy-iggy with --iggy-durability fsync.
	TargetKiggyIggyFsync = "kiggy-iggy-fsync"
	// TargetKiggyIggyBuffered is kiggy-iggy with --iggy-durability
	// buffered: Iggy's own defaults, the reference the durable levels are
	// measured against (docs/IGGY.md, "Durability").
	TargetKiggyIggyBuffered = "kiggy-iggy-buffered"
	// TargetKiggyIggySole is kiggy-iggy with --iggy-sole-writer: a
	// consumer at the tail waits for the gateway's own appends instead of
	// polling Iggy (docs/IGGY.md, "The tail window").
	TargetKiggyIggySole = "kiggy-iggy-sole"
	// TargetKiggyIggyCluster is kiggy-iggy against a 3-node Iggy cluster
	// (its nodes as seeds): the one Config.IggyClusterAddr names, else a
	// fresh one of IggyServerBin's processes, else an iggytest cluster.
	// Beside kiggy-iggy on a single server it gives the cost of
	// replication (docs/IGGY.md, "Iggy clusters").
	TargetKiggyIggyCluster = "kiggy-iggy-cluster"
	// TargetNull is the null broker (bench/nullbroker): it acknowledges
	// Produce without storing anything, the client's ceiling.
	TargetNull = "null"
)

// TargetIggyBench names the row of Iggy's own benchmark tool
// (Config.IggyBenchBin); it is not a target of -targets.
const TargetIggyBench = "iggy-bench"

// AllTargets lists every target kbench knows.
var AllTargets = []string{TargetKafka, TargetKiggy, TargetKiggyIggy, TargetKiggyIggyFsync, TargetKiggyIggyBuffered, TargetKiggyIggySole, TargetKiggyIggyCluster, TargetNull}

// iggyTargets maps each Iggy-backed target to its --iggy-durability.
var iggyTargets = map[string]string{
	TargetKiggyIggy:         "written",
	TargetKiggyIggyFsync:    "fsync",
	TargetKiggyIggyBuffered: "buffered",
	TargetKiggyIggySole:     "written",
	TargetKiggyIggyCluster:  "written",
}

// wantsIggy reports whether targets include an Iggy-backed one.
func wantsIggy(targets []string) bool {
	for _, t := range targets {
		if _, ok := iggyTargets[t]; ok {
			return true
		}
	}
	return false
}

// Load is one producer load: what every target is driven with. Its zero
// value is not usable; see DefaultLoad.
type Load struct {
	// RecordSize is the size of each record value in bytes (no key).
	RecordSize int `json:"record_size"`
	// Partitions is the topic's partition count.
	Partitions int32 `json:"partitions"`
	// Acks is -1 (all) or 1 (leader).
	Acks int `json:"acks"`
	// Compression is none, gzip, snappy, lz4 or zstd.
	Compression string `json:"compression"`
	// TopicCompression is the topic's compression.type, set at
	// CreateTopics ("" = not set, the broker's default producer): the
	// codec consumers are served in (docs/design/record-mapping.md §3.5).
	TopicCompression string `json:"topic_compression,omitempty"`
	// Producers is the number of producer clients. Each is one franz-go
	// client with connections of its own to the (one) broker: the seed
	// connection it starts from, and the broker's own connections for
	// Produce and for the rest (Metadata, InitProducerId), so a target sees
	// three sockets per producer, with or without idempotence (measured;
	// kbench logs the count at the end of each produce window).
	Producers int `json:"producers"`
	// InFlight is the number of Produce requests each producer keeps in
	// flight per broker (1–5 when idempotent). Producers are idempotent
	// exactly when Acks is -1 and InFlight is 5 (both clients' defaults).
	InFlight int `json:"in_flight"`
	// Linger is how long a partition's batch waits for more records
	// (Kafka linger.ms; Java 4.x default 5 ms).
	Linger time.Duration `json:"linger_ns"`
	// BatchBytes caps one partition's batch (Kafka batch.size; 0 = the
	// client's default: franz-go ~1 MB, Java 16 KiB).
	BatchBytes int `json:"batch_bytes,omitempty"`
	// BufferBytes caps each producer's buffered records (Kafka
	// buffer.memory).
	BufferBytes int `json:"buffer_bytes"`
}

// DefaultLoad is the goal load: 1 KiB records to 16 partitions, acks=all,
// no compression, 4 idempotent producers with 5 requests in flight.
var DefaultLoad = Load{
	RecordSize:  1024,
	Partitions:  16,
	Acks:        -1,
	Compression: "none",
	Producers:   4,
	InFlight:    5,
	Linger:      5 * time.Millisecond,
	BufferBytes: 32 << 20,
}

// MaxProducers bounds Load.Producers: each producer client holds three
// connections of its own (above), so 4,096 clients are ~12,000 sockets
// on each side of loopback, within kiggy's default --max-connections
// (10,000 per listener is the engine's; Kafka has no default bound).
const MaxProducers = 4096

// TotalBufferBytes is the producer buffer of all clients together at the
// default load (4 producers × 32 MiB). BufferFor keeps that total when a load
// has more producers, so that 1,000 clients do not ask for 32 GB.
const TotalBufferBytes = 4 * 32 << 20

// BufferFor is the default per-client buffer.memory for n producer clients:
// 32 MiB up to 4 clients, else TotalBufferBytes split between them, but at
// least minBuffer and 4 records of recordSize.
func BufferFor(n, recordSize int) int {
	const perClient, minBuffer = 32 << 20, 64 << 10
	b := min(perClient, TotalBufferBytes/max(n, 1))
	return max(b, minBuffer, 4*recordSize)
}

func (l Load) idempotent() bool { return l.Acks == -1 && l.InFlight == 5 }

// AcksString is "all" or "1".
func (l Load) AcksString() string {
	if l.Acks == -1 {
		return "all"
	}
	return strconv.Itoa(l.Acks)
}

// String describes l in one line.
func (l Load) String() string {
	topic := ""
	if l.TopicCompression != "" {
		topic = ", topic compression.type=" + l.TopicCompression
	}
	return fmt.Sprintf("%s records, %d partition%s, acks=%s, compression=%s%s, %d producer%s × %d in flight, linger %v",
		sizeString(l.RecordSize), l.Partitions, plural(int(l.Partitions)), l.AcksString(), l.Compression, topic,
		l.Producers, plural(l.Producers), l.InFlight, l.Linger)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sizeString(n int) string {
	switch {
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func (l Load) validate() error {
	var errs []error
	if l.RecordSize < 1 || l.RecordSize > 1<<20 {
		errs = append(errs, fmt.Errorf("record size %d out of [1, 1 MiB]", l.RecordSize))
	}
	if l.Partitions < 1 || l.Partitions > 1024 {
		errs = append(errs, fmt.Errorf("partitions %d out of [1, 1024]", l.Partitions))
	}
	if l.Acks != -1 && l.Acks != 1 {
		errs = append(errs, fmt.Errorf("acks %d: want -1 (all) or 1", l.Acks))
	}
	if _, err := compressionCodec(l.Compression); err != nil {
		errs = append(errs, err)
	}
	switch l.TopicCompression {
	case "", "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd":
	default:
		errs = append(errs, fmt.Errorf("topic compression.type %q: want producer, uncompressed, gzip, snappy, lz4 or zstd", l.TopicCompression))
	}
	if l.Producers < 1 || l.Producers > MaxProducers {
		errs = append(errs, fmt.Errorf("producers %d out of [1, %d]", l.Producers, MaxProducers))
	}
	if l.InFlight < 1 || l.InFlight > 100 {
		errs = append(errs, fmt.Errorf("in-flight %d out of [1, 100]", l.InFlight))
	}
	if l.Linger < 0 || l.Linger > time.Minute {
		errs = append(errs, fmt.Errorf("linger %v out of [0, 1m]", l.Linger))
	}
	if l.BufferBytes < l.RecordSize {
		errs = append(errs, fmt.Errorf("buffer %d bytes is smaller than one record", l.BufferBytes))
	}
	return errors.Join(errs...)
}

// Config configures a benchmark run. Its zero value is not usable: start
// from DefaultConfig or SmokeConfig.
type Config struct {
	// Targets are the targets to run, from AllTargets.
	Targets []string `json:"targets"`
	// Loads are the loads to run, each against every target.
	Loads []Load `json:"loads"`
	// Warmup is the time each target is driven before measuring.
	Warmup time.Duration `json:"warmup_ns"`
	// Duration is the measurement window per target per repetition.
	Duration time.Duration `json:"duration_ns"`
	// Repetitions is how many times every target runs each load; the
	// target order is reversed on every other repetition so that drift of
	// the machine hits all targets alike.
	Repetitions int `json:"repetitions"`
	// Consumers is the number of consumer clients reading everything back.
	Consumers int `json:"consumers"`
	// FanoutGroups, if above 1, adds a fan-out phase after the read-back:
	// that many independent readers ("consumer groups", Consumers clients
	// each) read the whole topic from the start at the same time; their
	// aggregate records/s is reported beside the one-group read-back
	// (docs/BENCHMARKS.md, "Consume through the read cache").
	FanoutGroups int `json:"fanout_groups,omitempty"`
	// Transactions adds a transactional run to every session beside the
	// idempotent max run (txn.go; docs/BENCHMARKS.md, "Transactions"):
	// each producer commits every TxnRecords records or every TxnInterval,
	// whichever comes first (0 = no such bound; at least one is needed),
	// and the topic is read back at read_uncommitted and read_committed.
	// Every load must be idempotent (acks=all, 5 in flight).
	Transactions bool          `json:"transactions,omitempty"`
	TxnRecords   int           `json:"txn_records,omitempty"`
	TxnInterval  time.Duration `json:"txn_interval_ns,omitempty"`
	// LatencyFraction, if positive, adds a rate-limited run of each load
	// at this fraction of Kafka's measured produce throughput (needs the
	// kafka target), reporting latency at a load every target sustains.
	LatencyFraction float64 `json:"latency_fraction"`
	// Rate, if positive, adds a rate-limited run at this many records/s
	// (all producers together) instead of one derived from Kafka.
	Rate float64 `json:"rate,omitempty"`
	// JavaPerf runs kafka-producer-perf-test (ProducerPerformance) against
	// every target after the franz-go load, with the same arguments.
	JavaPerf bool `json:"java_perf"`
	// JavaTargets limits kafka-producer-perf-test to these targets (nil =
	// every target).
	JavaTargets []string `json:"java_targets,omitempty"`
	// JavaRecords is the number of records kafka-producer-perf-test sends
	// (0 = about Warmup+Duration's worth at 100 MB/s, the first Warmup's
	// worth counted as --warmup-records).
	JavaRecords int64 `json:"java_records,omitempty"`
	// KafkaHeap is the broker JVM's heap (-Xms and -Xmx).
	KafkaHeap string `json:"kafka_heap"`
	// KafkaDir is where the broker's temporary directory (its log dirs)
	// is created. "" = /dev/shm when it is a tmpfs, else the system's
	// temporary directory: every other target keeps its data in RAM, so
	// by default Kafka does too, and the comparison is of the servers,
	// not of the machine's disk. Set a disk directory to measure Kafka
	// writing to disk (through the page cache, as Kafka always does).
	KafkaDir string `json:"kafka_dir"`
	// KafkaOnTmpfs reports whether KafkaDir is a tmpfs (set by Run).
	KafkaOnTmpfs bool `json:"kafka_on_tmpfs"`
	// IggyDir is where the fresh iggy-server processes' data directories
	// are created (IggyServerBin, the single node and the cluster). "" =
	// KafkaDir: both servers write to the same medium, tmpfs by default,
	// so that neither's latency includes the disk's writeback and the
	// other's does not. IggyOnTmpfs reports whether it is a tmpfs.
	IggyDir     string `json:"iggy_dir"`
	IggyOnTmpfs bool   `json:"iggy_on_tmpfs"`
	// IggyAddr, if set, points kiggy-iggy at this Iggy server instead of a
	// fresh iggytest process; IggyUsername and IggyPassword log in.
	IggyAddr string `json:"iggy_addr,omitempty"`
	// IggyServerBin, if set (and IggyAddr is not), is an iggy-server binary
	// the Iggy targets start themselves, each session with a fresh data
	// directory, instead of iggytest; its CPU and peak RSS count as the
	// server's beside kiggy's. IggyPID, with IggyAddr, measures an external
	// server by its pid. IggyBenchBin, if set, runs Iggy's own benchmark
	// tool against a fresh IggyServerBin (or IggyAddr) after each load: the
	// path's ceiling without Kafka in front (docs/BENCHMARKS.md).
	IggyServerBin string `json:"iggy_server_bin,omitempty"`
	IggyPID       int    `json:"iggy_pid,omitempty"`
	IggyBenchBin  string `json:"iggy_bench_bin,omitempty"`
	// IggyBenchDurability is the level iggy-bench's producers append at:
	// "" leaves iggy-bench to create its topics with Iggy's defaults (the
	// buffered level); "written" or "fsync" has kbench create them first
	// through kiggy's Iggy client at that level (the options kiggy-iggy's
	// topics get) and iggy-bench append to them (--reuse-streams), so the
	// ceiling is measured at kiggy-iggy's level (docs/BENCHMARKS.md).
	IggyBenchDurability string `json:"iggy_bench_durability,omitempty"`
	// IggyClusterAddr lists the nodes of an Iggy cluster (comma separated)
	// for the kiggy-iggy-cluster target (default: a fresh 3-node cluster of
	// IggyServerBin when set).
	IggyClusterAddr string `json:"iggy_cluster_addr,omitempty"`
	// IggyClusterPIDs, with IggyClusterAddr, are its nodes' pids, whose
	// CPU and RSS are measured as the server's beside kiggy's.
	IggyClusterPIDs []int  `json:"iggy_cluster_pids,omitempty"`
	IggyUsername    string `json:"-"`
	IggyPassword    string `json:"-"`
	// GatewayPackage is the Go package built and run for the kiggy
	// targets ("" = ./cmd/kiggy).
	GatewayPackage string `json:"gateway_package"`
	// ProfileDir, if set, runs the kiggy targets with cmd/kiggy's
	// --cpuprofile --profile-on-signal, writing a CPU profile per measurement
	// window into this directory.
	ProfileDir string `json:"profile_dir,omitempty"`
	// GatewayFlags are extra command-line flags for the kiggy targets
	// (e.g. "--fetch-cache-bytes 0"), to compare a setting in runs of the
	// same build.
	GatewayFlags []string `json:"gateway_flags,omitempty"`
	// WorkDir holds binaries, logs and broker data ("" = a new temporary
	// directory, removed at the end unless KeepWork).
	WorkDir  string `json:"-"`
	KeepWork bool   `json:"-"`
	// Smoke marks a smoke run (short, small load; figures not meaningful).
	Smoke bool `json:"smoke"`
	// Log receives progress lines (nil = os.Stderr).
	Log io.Writer `json:"-"`

	// brokerProps are extra Kafka broker properties a mode of the harness
	// sets (rebalance.go: the consumer-group timeouts kiggy gets as flags).
	brokerProps map[string]string
}

// DefaultTargets are the targets of the full benchmark: Kafka, kiggy on
// both backends (Iggy at the default durability) and the null broker. The
// other durability levels run when named (-targets), or in smoke mode.
var DefaultTargets = []string{TargetKafka, TargetKiggy, TargetKiggyIggy, TargetNull}

// DefaultConfig is the full benchmark: DefaultTargets, the goal load, 6 s
// after a 2 s warm-up, 2 repetitions, a rate-limited run at half Kafka's
// throughput, and kafka-producer-perf-test. The window is short because the
// in-memory targets hold everything produced until it has been read back: at
// ~400 MB/s, 8 s of producing is ~3 GB of records, and kiggy on memlog's
// resident set reached 1.7–2.4× the records it held (docs/BENCHMARKS.md).
func DefaultConfig() Config {
	return Config{
		Targets:         slices.Clone(DefaultTargets),
		Loads:           []Load{DefaultLoad},
		Warmup:          2 * time.Second,
		Duration:        6 * time.Second,
		Repetitions:     2,
		Consumers:       2,
		LatencyFraction: 0.5,
		TxnInterval:     DefaultTxnInterval,
		JavaPerf:        true,
		KafkaHeap:       "1g",
		IggyUsername:    "iggy",
		IggyPassword:    "iggy",
	}
}

// SmokeConfig is the smoke mode: every target, a small load for 2 s after
// 1 s of warm-up, one repetition, a short rate-limited run and a small
// kafka-producer-perf-test, so that every code path of the harness runs in
// about a minute. Its figures mean nothing.
func SmokeConfig() Config {
	c := DefaultConfig()
	c.Smoke = true
	c.Targets = slices.Clone(AllTargets)
	c.Loads = []Load{{
		RecordSize:  1024,
		Partitions:  4,
		Acks:        -1,
		Compression: "lz4",
		Producers:   2,
		InFlight:    5,
		Linger:      5 * time.Millisecond,
		BufferBytes: 4 << 20,
	}}
	c.Warmup = time.Second
	c.Duration = 2 * time.Second
	c.Repetitions = 1
	c.Consumers = 1
	c.LatencyFraction = 0
	c.Rate = 2000
	c.JavaRecords = 10000
	c.JavaTargets = []string{TargetKafka, TargetKiggy}
	c.KafkaHeap = "512m"
	return c
}

// normalize fills in the defaults and checks the configuration.
func (c *Config) normalize() error {
	c.setDefaults()
	errs := c.targetErrs()
	errs = append(errs, c.loadErrs()...)
	errs = append(errs, c.runErrs()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: invalid config: %w", err)
	}
	return nil
}

// setDefaults fills in what was left empty.
func (c *Config) setDefaults() {
	if c.Log == nil {
		c.Log = os.Stderr
	}
	if c.GatewayPackage == "" {
		c.GatewayPackage = "./cmd/kiggy"
	}
	if c.KafkaHeap == "" {
		c.KafkaHeap = "1g"
	}
	if c.KafkaDir == "" {
		c.KafkaDir = os.TempDir()
		if isTmpfs("/dev/shm") {
			c.KafkaDir = "/dev/shm"
		}
	}
	c.KafkaOnTmpfs = isTmpfs(c.KafkaDir)
	if c.IggyDir == "" {
		c.IggyDir = c.KafkaDir
	}
	c.IggyOnTmpfs = isTmpfs(c.IggyDir)
	if c.Consumers < 1 {
		c.Consumers = 1
	}
}

// targetErrs checks Targets and JavaTargets.
func (c *Config) targetErrs() []error {
	var errs []error
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("no targets"))
	}
	seen := map[string]bool{}
	for _, t := range c.Targets {
		if !slices.Contains(AllTargets, t) {
			errs = append(errs, fmt.Errorf("unknown target %q (want %s)", t, strings.Join(AllTargets, ", ")))
		}
		if seen[t] {
			errs = append(errs, fmt.Errorf("target %q listed twice", t))
		}
		seen[t] = true
	}
	for _, t := range c.JavaTargets {
		if !slices.Contains(AllTargets, t) {
			errs = append(errs, fmt.Errorf("unknown java-perf target %q", t))
		}
	}
	return errs
}

// loadErrs checks the loads, and that this process may open the sockets
// their producers need.
func (c *Config) loadErrs() []error {
	var errs []error
	if len(c.Loads) == 0 {
		errs = append(errs, errors.New("no loads"))
	}
	for i, l := range c.Loads {
		if err := l.validate(); err != nil {
			errs = append(errs, fmt.Errorf("load %d: %w", i+1, err))
		}
	}
	// Each producer client holds up to socketsPerProducer connections in
	// this process; a load that needs more descriptors than the limit
	// would fail midway with "too many open files".
	const socketsPerProducer, spareFDs = 3, 512
	if lim := openFileLimit(); lim > 0 {
		for i, l := range c.Loads {
			if need := l.Producers*socketsPerProducer + spareFDs; need > lim {
				errs = append(errs, fmt.Errorf("load %d: %d producers need about %d file descriptors, the limit is %d (raise ulimit -n)",
					i+1, l.Producers, need, lim))
			}
		}
	}
	return errs
}

// runErrs checks the run's shape: windows, fan-out, repetitions, rates.
func (c *Config) runErrs() []error {
	var errs []error
	if c.Warmup < 0 || c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("warm-up %v and duration %v: want ≥ 0 and > 0", c.Warmup, c.Duration))
	}
	if c.FanoutGroups < 0 {
		errs = append(errs, fmt.Errorf("fanout groups %d: want ≥ 0", c.FanoutGroups))
	}
	if c.Repetitions < 1 {
		errs = append(errs, fmt.Errorf("repetitions %d: want ≥ 1", c.Repetitions))
	}
	if c.LatencyFraction < 0 || c.LatencyFraction > 1 {
		errs = append(errs, fmt.Errorf("latency fraction %v out of [0, 1]", c.LatencyFraction))
	}
	if c.LatencyFraction > 0 && c.Rate <= 0 && !slices.Contains(c.Targets, TargetKafka) {
		errs = append(errs, errors.New("a latency fraction needs the kafka target (or an explicit rate)"))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %v: want ≥ 0", c.Rate))
	}
	return append(errs, c.txnErrs()...)
}

// txnErrs checks the transactional run's settings.
func (c *Config) txnErrs() []error {
	if !c.Transactions {
		return nil
	}
	var errs []error
	if c.TxnRecords < 0 || c.TxnInterval < 0 || (c.TxnRecords == 0 && c.TxnInterval == 0) {
		errs = append(errs, fmt.Errorf("transactions committing every %d records or %v: want ≥ 0 and at least one > 0", c.TxnRecords, c.TxnInterval))
	}
	for i, l := range c.Loads {
		if !l.idempotent() {
			errs = append(errs, fmt.Errorf("load %d: transactions need idempotent producers (acks=all, 5 in flight), not acks=%s with %d in flight", i+1, l.AcksString(), l.InFlight))
		}
	}
	return errs
}

// Package topicconfig is kiggy's table of the topic configs Kafka 4.4
// defines: each config's type, Kafka default, validator and broker synonym,
// and what kiggy does with it. It validates a value as a Kafka broker does
// (the same rules and the same error messages, docs/LIMITS.md "Topic configs")
// and encodes a topic's overrides for the system store. It keeps the few
// dynamic broker configs kiggy lets clients set too (broker.go).
package topicconfig

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a config's data type (Kafka ConfigDef.Type).
type Type uint8

// The types topic configs use.
const (
	Boolean Type = iota + 1
	String
	Int
	Long
	Double
	List
)

var typeNames = [...]string{Boolean: "BOOLEAN", String: "STRING", Int: "INT", Long: "LONG", Double: "DOUBLE", List: "LIST"}

// String returns Kafka's name of the type.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "UNKNOWN"
}

// Effect says what kiggy does with a config.
type Effect uint8

const (
	// Stored: accepted, validated, stored with the topic and reported back;
	// it changes nothing (it concerns Kafka's own segment files, cleaner,
	// replicas or tiered storage).
	Stored Effect = iota
	// Enforced: kiggy or the backend acts on it.
	Enforced
)

// Def is one topic config.
type Def struct {
	// Name is the topic config name.
	Name string
	// Type is its data type.
	Type Type
	// Default is Kafka's default, as DescribeConfigs prints it.
	Default string
	// Synonyms are the broker configs that set the default, highest
	// priority first (Kafka ServerTopicConfigSynonyms); none for a config
	// without a broker default.
	Synonyms []string
	// Effect is what kiggy does with it.
	Effect Effect
	// Doc is kiggy's one-line description (DescribeConfigs documentation).
	Doc string

	// check validates a trimmed, parsed value; "" when valid.
	check func(v string) string
}

const maxLong = "9223372036854775807"

// atLeast accepts integers (and doubles) ≥ min.
func atLeast(min float64) func(string) string {
	return func(v string) string {
		f, _ := strconv.ParseFloat(v, 64)
		if f < min {
			return "Value must be at least " + num(min)
		}
		return ""
	}
}

// between accepts numbers in [min, max].
func between(min, max float64) func(string) string {
	return func(v string) string {
		f, _ := strconv.ParseFloat(v, 64)
		switch {
		case f < min:
			return "Value must be at least " + num(min)
		case f > max:
			return "Value must be no more than " + num(max)
		}
		return ""
	}
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// oneOf accepts one of the given strings, case-sensitively.
func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if !slices.Contains(values, v) {
			return "String must be one of: " + strings.Join(values, ", ")
		}
		return ""
	}
}

// listOf accepts a list whose every element is one of values.
func listOf(values ...string) func(string) string {
	one := oneOf(values...)
	return func(v string) string {
		for _, e := range ParseList(v) {
			if m := one(e); m != "" {
				// Kafka names the element it refuses.
				return "\x00" + e + "\x00" + m
			}
		}
		return ""
	}
}

// CleanupPolicies are cleanup.policy's values.
var CleanupPolicies = []string{"compact", "delete"}

// CompressionTypes are compression.type's values (Kafka's order).
var CompressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

func gzipLevel(v string) string {
	n, _ := strconv.Atoi(v)
	if n == -1 || (n >= 1 && n <= 9) {
		return ""
	}
	return "Value must be between 1 and 9 or equal to -1"
}

// throttled accepts "*" or a list of partition:broker pairs.
func throttled(name string) func(string) string {
	return func(v string) string {
		l := ParseList(v)
		if len(l) == 1 && l[0] == "*" {
			return ""
		}
		for _, e := range l {
			p, b, ok := strings.Cut(e, ":")
			if !ok || !digits(p) || !digits(b) {
				return name + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
			}
		}
		return ""
	}
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// defs is Kafka 4.4's topic configs (LogConfig), sorted by name. The
// internal internal.segment.bytes is left out: Kafka hides it too.
var defs = []Def{
	{Name: "cleanup.policy", Type: List, Default: "delete", Synonyms: []string{"log.cleanup.policy"}, Effect: Enforced, check: listOf(CleanupPolicies...),
		Doc: "delete: retention.ms and retention.bytes expire records. compact alone: nothing expires; kiggy does not compact, so every record is kept and space is not reclaimed."},
	{Name: "compression.gzip.level", Type: Int, Default: "-1", Synonyms: []string{"compression.gzip.level"}, check: gzipLevel},
	{Name: "compression.lz4.level", Type: Int, Default: "9", Synonyms: []string{"compression.lz4.level"}, check: between(1, 17)},
	{Name: "compression.type", Type: String, Default: "producer", Synonyms: []string{"compression.type"}, Effect: Enforced, check: oneOf(CompressionTypes...),
		Doc: "The codec Fetch serves the topic's batches in; records are stored uncompressed."},
	{Name: "compression.zstd.level", Type: Int, Default: "3", Synonyms: []string{"compression.zstd.level"}, check: between(-131072, 22)},
	{Name: "delete.retention.ms", Type: Long, Default: "86400000", Synonyms: []string{"log.cleaner.delete.retention.ms"}, check: atLeast(0)},
	{Name: "errors.deadletterqueue.group.enable", Type: Boolean, Default: "false"},
	{Name: "file.delete.delay.ms", Type: Long, Default: "60000", Synonyms: []string{"log.segment.delete.delay.ms"}, check: atLeast(0)},
	{Name: "flush.messages", Type: Long, Default: maxLong, Synonyms: []string{"log.flush.interval.messages"}, Effect: Enforced, check: atLeast(1),
		Doc: "1 = the backend fsyncs every write (any interval below the default asks for that); set at creation."},
	{Name: "flush.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}, Effect: Enforced, check: atLeast(0),
		Doc: "0 = the backend fsyncs every write (any interval below the default asks for that); set at creation."},
	{Name: "follower.replication.throttled.replicas", Type: List, Default: "", check: throttled("follower.replication.throttled.replicas")},
	{Name: "index.interval.bytes", Type: Int, Default: "4096", Synonyms: []string{"log.index.interval.bytes"}, check: atLeast(0)},
	{Name: "leader.replication.throttled.replicas", Type: List, Default: "", check: throttled("leader.replication.throttled.replicas")},
	{Name: "local.retention.bytes", Type: Long, Default: "-2", Synonyms: []string{"log.local.retention.bytes"}, check: atLeast(-2)},
	{Name: "local.retention.ms", Type: Long, Default: "-2", Synonyms: []string{"log.local.retention.ms"}, check: atLeast(-2)},
	{Name: "max.compaction.lag.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.cleaner.max.compaction.lag.ms"}, check: atLeast(1)},
	{Name: "max.decompressed.message.bytes", Type: Int, Default: "2147483639", Synonyms: []string{"max.decompressed.message.bytes"}, check: between(1, 2147483639)},
	{Name: "max.message.bytes", Type: Int, Default: "1048588", Synonyms: []string{"message.max.bytes"}, Effect: Enforced, check: atLeast(0),
		Doc: "The largest record batch Produce accepts for the topic (MESSAGE_TOO_LARGE above it); never more than the frame limit."},
	{Name: "message.timestamp.after.max.ms", Type: Long, Default: "3600000", Synonyms: []string{"log.message.timestamp.after.max.ms"}, check: atLeast(0)},
	{Name: "message.timestamp.before.max.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.message.timestamp.before.max.ms"}, check: atLeast(0)},
	{Name: "message.timestamp.type", Type: String, Default: "CreateTime", Synonyms: []string{"log.message.timestamp.type"}, Effect: Enforced, check: oneOf("CreateTime", "LogAppendTime"),
		Doc: "CreateTime keeps the producer's timestamp; LogAppendTime stamps records with the time kiggy appends them."},
	{Name: "min.cleanable.dirty.ratio", Type: Double, Default: "0.5", Synonyms: []string{"log.cleaner.min.cleanable.ratio"}, check: between(0, 1)},
	{Name: "min.compaction.lag.ms", Type: Long, Default: "0", Synonyms: []string{"log.cleaner.min.compaction.lag.ms"}, check: atLeast(0)},
	{Name: "min.insync.replicas", Type: Int, Default: "1", Synonyms: []string{"min.insync.replicas"}, check: atLeast(1),
		Doc: "One replica per partition (Iggy replicates on its own): stored only."},
	{Name: "preallocate", Type: Boolean, Default: "false", Synonyms: []string{"log.preallocate"}},
	{Name: "remote.copy.lag.bytes", Type: Long, Default: "-1", Synonyms: []string{"log.remote.copy.lag.bytes"}, check: atLeast(-1)},
	{Name: "remote.copy.lag.ms", Type: Long, Default: "0", Synonyms: []string{"log.remote.copy.lag.ms"}, check: atLeast(-1)},
	{Name: "remote.log.copy.disable", Type: Boolean, Default: "false"},
	{Name: "remote.log.delete.on.disable", Type: Boolean, Default: "false"},
	{Name: "remote.storage.enable", Type: Boolean, Default: "false"},
	{Name: "retention.bytes", Type: Long, Default: "-1", Synonyms: []string{"log.retention.bytes"}, Effect: Enforced,
		Doc: "Size cap (Iggy max_topic_size; the embedded log's per-partition cap); -1 = unlimited."},
	{Name: "retention.ms", Type: Long, Default: "604800000", Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}, Effect: Enforced, check: atLeast(-1),
		Doc: "Message expiry (Iggy message_expiry); -1 = forever."},
	{Name: "segment.bytes", Type: Int, Default: "1073741824", Synonyms: []string{"log.segment.bytes"}, check: atLeast(1024 * 1024)},
	{Name: "segment.index.bytes", Type: Int, Default: "10485760", Synonyms: []string{"log.index.size.max.bytes"}, check: atLeast(4)},
	{Name: "segment.jitter.ms", Type: Long, Default: "0", Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}, check: atLeast(0)},
	{Name: "segment.ms", Type: Long, Default: "604800000", Synonyms: []string{"log.roll.ms", "log.roll.hours"}, check: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: Boolean, Default: "false", Synonyms: []string{"unclean.leader.election.enable"}},
}

// All returns every topic config, sorted by name. The slice is shared:
// callers must not modify it.
func All() []Def { return defs }

// Lookup finds a config by name.
func Lookup(name string) (*Def, bool) { return lookupIn(defs, name) }

// lookupIn finds config name in table, sorted by name.
func lookupIn(table []Def, name string) (*Def, bool) {
	i, ok := slices.BinarySearchFunc(table, name, func(d Def, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil, false
	}
	return &table[i], true
}

// Error is a config Kafka would refuse, with Kafka's message.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Unknown is the error for a name Kafka does not define.
func Unknown(name string) error { return &Error{"Unknown topic config name: " + name} }

// Normalize validates value for config name as Kafka does and returns the
// value to store (trimmed; a list without duplicates, joined by ","). The
// error is an *Error with Kafka's message.
func Normalize(name, value string) (string, error) {
	d, ok := Lookup(name)
	if !ok {
		return "", Unknown(name)
	}
	return d.Normalize(value)
}

// Normalize validates value for d as Kafka does and returns the value to
// store, as the package's Normalize does for a config name.
func (d *Def) Normalize(value string) (string, error) {
	name := d.Name
	// Clone: value may alias a request frame, and the result is stored.
	v := strings.Clone(strings.TrimSpace(value))
	bad := func(why string) (string, error) {
		return "", &Error{"Invalid value " + value + " for configuration " + name + ": " + why}
	}
	switch d.Type {
	case Boolean:
		switch strings.ToLower(v) {
		case "true", "false":
			v = strings.ToLower(v)
		default:
			return bad("Expected value to be either true or false")
		}
	case Int:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return bad("Not a number of type INT")
		}
	case Long:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return bad("Not a number of type LONG")
		}
	case Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return bad("Not a number of type DOUBLE")
		}
	case List:
		v = strings.Join(ParseList(v), ",")
	}
	if d.check != nil {
		if m := d.check(v); m != "" {
			if shown, why, ok := strings.Cut(strings.TrimPrefix(m, "\x00"), "\x00"); ok {
				value, m = shown, why
			} else if d.Type == List {
				// Kafka prints a list value as a Java list.
				value = "[" + strings.Join(ParseList(v), ", ") + "]"
			}
			return bad(m)
		}
	}
	return v, nil
}

// ParseList splits a LIST value as Kafka does: on commas, each element
// trimmed, empty input an empty list, duplicates dropped (first kept).
func ParseList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Values are a topic's overrides: config name → normalized value.
type Values map[string]string

// Check applies Kafka's checks across configs (LogConfig.validateValues):
// min.compaction.lag.ms must not exceed max.compaction.lag.ms.
func (v Values) Check() error {
	lo, hi := v.Long("min.compaction.lag.ms"), v.Long("max.compaction.lag.ms")
	if lo > hi {
		return &Error{"conflict topic config setting min.compaction.lag.ms (" + strconv.FormatInt(lo, 10) + ") > max.compaction.lag.ms (" + strconv.FormatInt(hi, 10) + ")"}
	}
	return nil
}

// Get returns the override or Kafka's default.
func (v Values) Get(name string) string {
	if s, ok := v[name]; ok {
		return s
	}
	if d, ok := Lookup(name); ok {
		return d.Default
	}
	return ""
}

// Long returns a LONG or INT config's value (override or default).
func (v Values) Long(name string) int64 {
	n, _ := strconv.ParseInt(v.Get(name), 10, 64)
	return n
}

// Compact reports whether cleanup.policy is compact alone (or empty):
// nothing may expire.
func (v Values) Compact() bool {
	l := ParseList(v.Get("cleanup.policy"))
	return !slices.Contains(l, "delete")
}

// LogAppendTime reports whether message.timestamp.type is LogAppendTime.
func (v Values) LogAppendTime() bool { return v.Get("message.timestamp.type") == "LogAppendTime" }

// version is the first byte of an encoded Values.
const version = 1

// ErrCorrupt is returned by Decode for bytes Encode did not write.
var ErrCorrupt = errors.New("topicconfig: corrupt encoding")

// Encode writes v for the system store: version 1, then per entry (sorted by
// name) a uvarint-length name and a uvarint-length value.
func (v Values) Encode() []byte {
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	slices.Sort(names)
	b := []byte{version}
	for _, k := range names {
		b = appendStr(b, k)
		b = appendStr(b, v[k])
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decode reads what Encode wrote.
func Decode(b []byte) (Values, error) {
	if len(b) == 0 || b[0] != version {
		return nil, ErrCorrupt
	}
	b = b[1:]
	v := Values{}
	for len(b) > 0 {
		var k, s string
		var ok bool
		if k, b, ok = readStr(b); !ok {
			return nil, ErrCorrupt
		}
		if s, b, ok = readStr(b); !ok {
			return nil, ErrCorrupt
		}
		v[k] = s
	}
	return v, nil
}

func readStr(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return "", nil, false
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return "", nil, false
	}
	return string(b[:n]), b[n:], true
}

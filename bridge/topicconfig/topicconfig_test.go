package topicconfig

import (
	"slices"
	"strings"
	"testing"
)

// TestNormalizeAsKafka checks values against the answers of Kafka 4.4's own
// LogConfig.validate (messages recorded from kafka-storage-4.4.0.jar).
func TestNormalizeAsKafka(t *testing.T) {
	cases := []struct{ name, value, want, err string }{
		{"retention.ms", "abc", "", "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", "-2", "", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"retention.ms", " 5 ", "5", ""},
		{"max.message.bytes", "-1", "", "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"},
		{"max.message.bytes", "99999999999", "", "Invalid value 99999999999 for configuration max.message.bytes: Not a number of type INT"},
		{"cleanup.policy", "foo", "", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"},
		{"cleanup.policy", "", "", ""},
		{"cleanup.policy", "compact,compact", "compact", ""},
		{"cleanup.policy", "Compact", "", "Invalid value Compact for configuration cleanup.policy: String must be one of: compact, delete"},
		{"cleanup.policy", "compact, delete", "compact,delete", ""},
		{"compression.type", "GZIP", "", "Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"message.timestamp.type", "logappendtime", "", "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"message.timestamp.type", "LogAppendTime", "LogAppendTime", ""},
		{"preallocate", "yes", "", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
		{"preallocate", "TRUE", "true", ""},
		{"min.cleanable.dirty.ratio", "1.5", "", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "x", "", "Invalid value x for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{"compression.gzip.level", "0", "", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.zstd.level", "23", "", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
		{"leader.replication.throttled.replicas", "0:1,x", "", "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{"leader.replication.throttled.replicas", "*", "*", ""},
		{"segment.bytes", "100", "", "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"},
		{"retention.bytes", "-5", "-5", ""},
		{"max.decompressed.message.bytes", "0", "", "Invalid value 0 for configuration max.decompressed.message.bytes: Value must be at least 1"},
		{"foo.bar", "1", "", "Unknown topic config name: foo.bar"},
	}
	for _, c := range cases {
		got, err := Normalize(c.name, c.value)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s=%q: err %v, want %q", c.name, c.value, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s=%q: %q, %v; want %q", c.name, c.value, got, err, c.want)
		}
	}
	if err := (Values{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}).Check(); err == nil ||
		err.Error() != "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)" {
		t.Errorf("compaction lag check: %v", err)
	}
}

// TestTable checks that the table is sorted, every default is valid, and
// every name Kafka 4.4 defines is present.
func TestTable(t *testing.T) {
	if !slices.IsSortedFunc(defs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("defs not sorted")
	}
	for _, d := range defs {
		if _, err := Normalize(d.Name, d.Default); err != nil {
			t.Errorf("default of %s: %v", d.Name, err)
		}
	}
	if len(defs) != 37 {
		t.Errorf("%d configs, Kafka 4.4 has 37 (without internal.segment.bytes)", len(defs))
	}
}

// TestBrokerTable checks the dynamic broker configs as TestTable the
// topic configs, and that a name of either table is not taken for the
// other's.
func TestBrokerTable(t *testing.T) {
	if !slices.IsSortedFunc(brokerDefs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("brokerDefs not sorted")
	}
	for _, d := range Broker() {
		if got, ok := LookupBroker(d.Name); !ok || got.Name != d.Name {
			t.Errorf("LookupBroker(%s) = %v, %v", d.Name, got, ok)
		}
		if _, err := d.Normalize(d.Default); err != nil {
			t.Errorf("default of %s: %v", d.Name, err)
		}
		if _, ok := Lookup(d.Name); ok {
			t.Errorf("%s is a topic config too", d.Name)
		}
	}
	if _, ok := LookupBroker("retention.ms"); ok {
		t.Error("LookupBroker found a topic config")
	}
	for v, want := range map[string]string{" 100 ": "100", "-1": "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0",
		"1.5": "Invalid value 1.5 for configuration leader.replication.throttled.rate: Not a number of type LONG"} {
		d, _ := LookupBroker("leader.replication.throttled.rate")
		got, err := d.Normalize(v)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("Normalize(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	v := Values{"cleanup.policy": "compact", "retention.ms": "100", "x": ""}
	got, err := Decode(v.Encode())
	if err != nil || len(got) != 3 || got["cleanup.policy"] != "compact" || got["x"] != "" {
		t.Fatalf("%v %v", got, err)
	}
	for _, b := range [][]byte{nil, {2}, {1, 5, 'a'}, {1, 1, 'a'}} {
		if _, err := Decode(b); err == nil {
			t.Errorf("Decode(%v) accepted", b)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Values{"a": "b"}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err == nil {
			if _, err := Decode(v.Encode()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("cleanup.policy", "compact,delete")
	f.Add("retention.ms", "-1")
	f.Fuzz(func(t *testing.T, name, value string) {
		v, err := Normalize(name, value)
		if err == nil {
			if w, err := Normalize(name, v); err != nil || w != v {
				t.Fatalf("%s=%q normalized to %q, then %q %v", name, value, v, w, err)
			}
		}
	})
}

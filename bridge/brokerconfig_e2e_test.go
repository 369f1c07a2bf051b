package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestBrokerConfigAlterations: of a broker's configs, the replication
// throttles kafka-reassign-partitions --throttle sets are kept, per broker
// and as the cluster default, and described as Kafka 4.4 describes them
// (only when set; the broker's own value first, both levels among the
// synonyms); every other broker config is a flag, and its alteration is
// INVALID_CONFIG. Bad values get Kafka's messages, a broker id not this
// one INVALID_REQUEST, validate_only stores nothing, and AlterConfigs
// replaces the set as Kafka's does.
func TestBrokerConfigAlterations(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const leader, follower, logDirs = "leader.replication.throttled.rate", "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"
	type op struct {
		name  string
		op    kmsg.IncrementalAlterConfigOp
		value string
	}
	set := func(name, value string) op { return op{name, kmsg.IncrementalAlterConfigOpSet, value} }
	del := func(name string) op { return op{name, kmsg.IncrementalAlterConfigOpDelete, ""} }
	incremental := func(broker string, validateOnly bool, ops ...op) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, broker
		for _, o := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op = o.name, o.op
			if o.op != kmsg.IncrementalAlterConfigOpDelete {
				c.Value = kmsg.StringPtr(o.value)
			}
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		// Straight to the broker: the client would route a resource
		// named for an unknown broker nowhere.
		raw, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := raw.(*kmsg.IncrementalAlterConfigsResponse)
		var msg string
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	// describe returns a broker resource's configs as name=value source
	// [synonyms], the throttles only.
	describe := func(broker string) string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, broker
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		res := resp.Resources[0]
		if res.ErrorCode != 0 {
			t.Fatalf("describing broker %q: %v", broker, kerr.ErrorForCode(res.ErrorCode))
		}
		var out []string
		for _, c := range res.Configs {
			if !strings.Contains(c.Name, "throttled") && c.Name != logDirs {
				continue
			}
			if c.ConfigType != kmsg.ConfigTypeLong || c.ReadOnly {
				t.Errorf("%s: type %v, read-only %v; want a writable LONG", c.Name, c.ConfigType, c.ReadOnly)
			}
			var syn []string
			for _, s := range c.ConfigSynonyms {
				syn = append(syn, fmt.Sprintf("%v:%s=%s", s.Source, s.Name, *s.Value))
			}
			out = append(out, fmt.Sprintf("%s=%s %v [%s]", c.Name, *c.Value, c.Source, strings.Join(syn, " ")))
		}
		return strings.Join(out, "; ")
	}
	want := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}

	// Nothing set: nothing described; deleting what is not set succeeds
	// (kafka-reassign-partitions --verify's cleanup).
	want("broker 1, nothing set", describe("1"), "")
	if code, msg := incremental("1", false, del(leader), del(follower), del(logDirs)); code != 0 {
		t.Errorf("deleting unset throttles: %v %s", kerr.ErrorForCode(code), msg)
	}
	// Set on the broker and as the cluster default.
	if code, msg := incremental("1", false, set(leader, "50000000"), set(follower, "50000000")); code != 0 {
		t.Fatalf("setting the broker's throttles: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := incremental("", false, set(leader, "100"), set(logDirs, "200")); code != 0 {
		t.Fatalf("setting the default throttles: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("broker 1", describe("1"),
		"follower.replication.throttled.rate=50000000 DYNAMIC_BROKER_CONFIG [DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=50000000]; "+
			"leader.replication.throttled.rate=50000000 DYNAMIC_BROKER_CONFIG [DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=50000000 DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=100]; "+
			"replica.alter.log.dirs.io.max.bytes.per.second=200 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:replica.alter.log.dirs.io.max.bytes.per.second=200]")
	want("the cluster default", describe(""),
		"leader.replication.throttled.rate=100 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=100]; "+
			"replica.alter.log.dirs.io.max.bytes.per.second=200 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:replica.alter.log.dirs.io.max.bytes.per.second=200]")

	// Refusals, each changing nothing.
	before := describe("1")
	for _, c := range []struct {
		what   string
		broker string
		ops    []op
		code   int16
		msg    string
	}{
		{"a negative throttle", "1", []op{set(leader, "-1")}, kerr.InvalidConfig.Code, "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
		{"a throttle that is no number", "1", []op{set(follower, "fast")}, kerr.InvalidConfig.Code, "Invalid value fast for configuration follower.replication.throttled.rate: Not a number of type LONG"},
		{"APPEND to a LONG", "1", []op{{leader, kmsg.IncrementalAlterConfigOpAppend, "1"}}, kerr.InvalidConfig.Code, "Config value append is not allowed for config key: leader.replication.throttled.rate"},
		{"a broker flag", "1", []op{set("log.retention.ms", "1000")}, kerr.InvalidConfig.Code, ""},
		{"deleting a flag beside a throttle", "1", []op{del(leader), del("log.retention.ms")}, kerr.InvalidConfig.Code, ""},
		{"another broker's id", "7", []op{set(leader, "1")}, kerr.InvalidRequest.Code, "Unexpected broker id, expected 1 or empty string, but received 7"},
		{"the same config twice", "1", []op{set(leader, "1"), del(leader)}, kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
	} {
		code, msg := incremental(c.broker, false, c.ops...)
		if code != c.code || c.msg != "" && msg != c.msg {
			t.Errorf("%s: %v %q, want %v %q", c.what, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(c.code), c.msg)
		}
	}
	if code, _ := incremental("1", true, set(leader, "7")); code != 0 {
		t.Errorf("validate_only: %v", kerr.ErrorForCode(code))
	}
	want("after the refusals and validate_only", describe("1"), before)

	// AlterConfigs replaces the broker's set: the follower throttle goes.
	full := kmsg.NewPtrAlterConfigsRequest()
	fr := kmsg.NewAlterConfigsRequestResource()
	fr.ResourceType, fr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	fc := kmsg.NewAlterConfigsRequestResourceConfig()
	fc.Name, fc.Value = leader, kmsg.StringPtr("60000000")
	fr.Configs = append(fr.Configs, fc)
	full.Resources = append(full.Resources, fr)
	if resp, err := full.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("AlterConfigs of broker 1: %v", kerr.ErrorForCode(code))
	}
	want("broker 1 after AlterConfigs", describe("1"),
		"leader.replication.throttled.rate=60000000 DYNAMIC_BROKER_CONFIG [DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=60000000 DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=100]; "+
			"replica.alter.log.dirs.io.max.bytes.per.second=200 DYNAMIC_DEFAULT_BROKER_CONFIG [DYNAMIC_DEFAULT_BROKER_CONFIG:replica.alter.log.dirs.io.max.bytes.per.second=200]")

	// Deleted, they are gone, and the broker's other configs stay.
	if code, msg := incremental("1", false, del(leader), del(follower), del(logDirs)); code != 0 {
		t.Errorf("deleting the broker's throttles: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := incremental("", false, del(leader), del(logDirs)); code != 0 {
		t.Errorf("deleting the default throttles: %v %s", kerr.ErrorForCode(code), msg)
	}
	want("broker 1 after the deletions", describe("1"), "")
	want("the cluster default after the deletions", describe(""), "")
}
